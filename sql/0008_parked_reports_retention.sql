-- why: a provider's status report can arrive before the send has stored the message's SID; it is
-- parked here (for an hour) and applied once the SID exists, instead of being lost. And the retention
-- worker needs to find finished webhook events by age without scanning the table.

create table parked_reports (
  id bigint generated always as identity primary key,
  message_sid text not null,
  status text not null,
  error_code integer,
  error_message text,
  received_at timestamptz not null default now(),
  expires_at timestamptz not null,
  constraint parked_reports_status_known check (status in ('delivered', 'read', 'failed'))
);
create index parked_reports_sid on parked_reports (message_sid, id);
create index parked_reports_expires on parked_reports (expires_at);

-- A finished event's last activity: delivered_at when delivered, else the due time of its last attempt
-- (a replay sets it to the moment of the replay).
create index webhook_events_finished on webhook_events ((coalesce(delivered_at, next_attempt_at))) where status <> 'pending';
