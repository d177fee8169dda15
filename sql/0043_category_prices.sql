-- why: a price per category, as WhatsApp charges (issue 31). A price (the global one, or an account's
-- own) may give `marketing`, `utility`, `authentication` and `service` their own price beside
-- `cost_per_message`; a category without one pays `cost_per_message` (the price of a free-form
-- message), so an installation that sets nothing changes nothing. An account's own price is whole: its
-- unset categories pay its own `cost_per_message`, not the global price's. `settle` says whether
-- Meta's pricing report settles a message to the category Meta reports (`provider`) or the charge
-- stays as made (`keep`). Every change of a price is kept (price_changes). A message records the
-- category it was charged for: its WhatsApp template's category, else `service`.

alter table prices
  add column marketing bigint,
  add column utility bigint,
  add column authentication bigint,
  add column service bigint,
  add column settle text not null default 'provider',
  add constraint prices_categories_positive check (
    coalesce(marketing, 1) > 0 and coalesce(utility, 1) > 0 and coalesce(authentication, 1) > 0 and coalesce(service, 1) > 0),
  add constraint prices_settle_known check (settle in ('provider', 'keep'));

-- The history of prices: one row per change (a price set, an account's own price removed: `removed`).
create table price_changes (
  id bigint generated always as identity primary key,
  account_id bigint references accounts (id) on delete cascade,
  cost_per_message bigint,
  marketing bigint,
  utility bigint,
  authentication bigint,
  service bigint,
  refund_late_failures boolean,
  settle text,
  removed boolean not null default false,
  changed_at timestamptz not null
);
create index price_changes_account on price_changes (coalesce(account_id, 0), id desc);
insert into price_changes (account_id, cost_per_message, refund_late_failures, settle, changed_at)
select account_id, cost_per_message, refund_late_failures, settle, updated_at from prices order by id;

-- The price of one message of `category` for an account now: its own price's, else the global price's;
-- within that price, the category's own price, else its cost_per_message.
create function account_category_price(account bigint, category text) returns bigint language sql stable as $$
  select case category
           when 'marketing' then coalesce(p.marketing, p.cost_per_message)
           when 'utility' then coalesce(p.utility, p.cost_per_message)
           when 'authentication' then coalesce(p.authentication, p.cost_per_message)
           else coalesce(p.service, p.cost_per_message) end
  from prices p
  where p.account_id = account or p.account_id is null
  order by p.account_id is null
  limit 1
$$;

-- Whether Meta's pricing settles an account's messages (`provider`) or their charges stay (`keep`), now.
create function account_settle(account bigint) returns text language sql stable as $$
  select p.settle from prices p
  where p.account_id = account or p.account_id is null
  order by p.account_id is null
  limit 1
$$;

-- The category a message is charged for: its WhatsApp template's (ids are shared with account
-- templates, which have none), else `service`.
create function message_category(template bigint) returns text language sql stable as $$
  select coalesce((select category from wa_templates where id = template), 'service')
$$;

alter table messages
  add column category text not null default 'service'
    constraint messages_category_known check (category in ('marketing', 'utility', 'authentication', 'service'));
