-- why: a settlement on Meta's pricing changes what a message costs, and integrators learned of it only by
-- reading the message again (issue 31). A registration may now choose `message.settled`, recorded with
-- the settlement in the status change's statement (status/machine.ts).
alter table webhook_endpoints drop constraint webhook_endpoints_events_known;
alter table webhook_endpoints add constraint webhook_endpoints_events_known check (
  cardinality(events) > 0
  and events <@ array['message.status', 'message.received', 'contact.opted_out', 'contact.opted_in', 'balance.low',
                      'template.status_changed', 'verification.approved', 'sender.status_changed', 'message.settled']
);
