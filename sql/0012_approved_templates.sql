-- why: approved templates for business-initiated messages. An account template can be bound to a
-- provider's approved template (one binding per provider per template, so a template can carry a
-- Twilio and a Meta binding at once and the provider in use picks its own). A message records which
-- account template it was rendered from and, when it went as an approved template, what the provider
-- was asked to send (so a recovered hand-off sends the same thing). The simulator keeps the numbers
-- that "wrote in" (their 24-hour customer window) in the database, so every instance agrees.

-- variables: the account template's placeholder names, in the provider template's order ({{1}}, {{2}}…
-- for Twilio; the body parameters for Meta). A template's bindings go with it.
create table template_bindings (
  template_id bigint not null references templates (id) on delete cascade,
  provider text not null,
  ref text not null,
  language text,
  variables text[] not null default '{}',
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  primary key (template_id, provider)
);

-- template_id is a record of what the text was rendered from, not a reference: a template deleted
-- later leaves its messages as they were. provider_template: {provider, ref, language, variables}
-- with the values sent, null for a free-form message.
alter table messages
  add column template_id bigint,
  add column provider_template jsonb;

create table simulator_inbound (
  phone text primary key,
  last_inbound_at timestamptz not null
);
