-- why: a status report parked before its message's SID is stored keeps Meta's `pricing` (issue 31), so
-- the settlement it asks for happens when it is applied, as for a report that arrives in order.
alter table parked_reports add column pricing jsonb;
