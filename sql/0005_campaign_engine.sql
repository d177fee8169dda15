-- why: running campaigns. Each (campaign, contact) gets at most one message (a unique index), so a
-- crash and restart resume without duplicates. The recipients are the segment's contacts when the
-- run starts (up to max_contact_id); cursor_contact_id is the progress, committed with each batch's charge.

alter table messages add column contact_id bigint references contacts (id);
create unique index messages_campaign_contact_once on messages (campaign_id, contact_id) where campaign_id is not null;

alter table campaigns
  add column total_recipients integer,
  add column max_contact_id bigint,
  add column cursor_contact_id bigint not null default 0,
  add column lease_token uuid,
  add column lease_until timestamptz;
create index campaigns_sending on campaigns (id) where status = 'sending';

-- Segments walk an account's contacts in id order.
create index contacts_account_id on contacts (account_id, id);
