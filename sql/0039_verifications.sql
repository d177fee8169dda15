-- why: one-time passwords (issue 30 §4). POST /api/v1/verifications makes a code, sends it through an
-- approved authentication template (a charged message like any other: messages keeps its row), and
-- keeps only the code's salted hash; POST /verifications/{id}/check compares in constant time, counts
-- wrong codes and ends the verification when it is approved, expired or out of attempts. A number and
-- an account may start only so many verifications per window (counted here by created_at). A
-- registration may choose the `verification.approved` event.

create table verifications (
  id bigint generated always as identity primary key,
  account_id bigint not null references accounts (id),
  api_key_id bigint,
  phone text not null,
  template_id bigint not null,
  message_id bigint,
  message_sid text,
  code_salt text not null,
  code_hash text not null,
  status text not null default 'pending',
  attempts integer not null default 0,
  max_attempts integer not null,
  created_at timestamptz not null,
  expires_at timestamptz not null,
  approved_at timestamptz,
  constraint verifications_status_known
    check (status in ('pending', 'approved', 'expired', 'too_many_attempts', 'failed'))
);
create index verifications_number on verifications (account_id, phone, created_at);
create index verifications_account on verifications (account_id, created_at);

alter table webhook_endpoints drop constraint webhook_endpoints_events_known;
alter table webhook_endpoints add constraint webhook_endpoints_events_known check (
  cardinality(events) > 0
  and events <@ array['message.status', 'message.received', 'contact.opted_out', 'contact.opted_in', 'balance.low',
                      'template.status_changed', 'verification.approved']
);
