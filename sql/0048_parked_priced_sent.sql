-- why: a `sent` report that arrives before its message's SID is stored was dropped (it moves no
-- status), but Meta's `sent` carries `pricing`: dropped, its settlement was lost (the fault test found
-- it: a message Meta priced on `sent`, then reported failed, was never settled). Such a report is now
-- parked like the others when it carries pricing, and applied in order once the SID is stored.
alter table parked_reports drop constraint parked_reports_status_known;
alter table parked_reports add constraint parked_reports_status_known check (status in ('sent', 'delivered', 'read', 'failed'));
