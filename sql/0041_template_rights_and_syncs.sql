-- why: issue 30's submit, edit, delete and sync rounds. An operator may let an account's members create,
-- edit and delete WhatsApp templates for the account's own senders (off by default: a row here is the
-- permission, granted by whom and when). A member's change is recorded in a template's history with
-- source `member`. Each sender's last template sync (on demand, periodic, or when the sender is created
-- or checked) is kept with its outcome, so a sync that failed while the sender was created or checked is
-- shown without failing the create or the check.
create table template_member_rights (
  account_id bigint primary key references accounts (id) on delete cascade,
  granted_at timestamptz not null
);

alter table wa_template_changes drop constraint wa_template_changes_source_known;
alter table wa_template_changes add constraint wa_template_changes_source_known
  check (source in ('operator', 'member', 'sync', 'meta', 'twilio', 'simulator'));

create table sender_template_syncs (
  sender_id bigint primary key references senders (id) on delete cascade,
  -- what asked for it: 'created', 'checked', 'demand' or 'periodic'
  trigger text not null,
  ok boolean not null,
  -- the counts when it worked, the provider's words (never a credential) when it did not
  detail text not null,
  synced_at timestamptz not null,
  constraint sender_template_syncs_trigger_known check (trigger in ('created', 'checked', 'demand', 'periodic'))
);
