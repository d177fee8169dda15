-- why: WhatsApp's messaging limit (issue 19, part 5). A business-initiated message (to a customer whose
-- 24-hour window with the sender is closed) may reach only so many unique recipients per rolling 24 hours:
-- the tier (250, 2,000, 10,000, 100,000; null: unlimited). The tier is a sender's own, or, for senders put
-- in a portfolio, the portfolio's: its senders share one budget, as Meta counts per business portfolio.
-- The deployment's default sender takes its tier from MESSAGING_LIMIT.
--
-- A budget ('default', 'sender:<id>' or 'portfolio:<id>') is a row of messaging_budgets, locked by
-- whoever records a use in it, so that the count each reads includes every other instance's uses. A
-- use is a recipient counted in a budget since `first_at`; a use of a single or bulk send is first held
-- (`held_until`, its request's token), then kept once its request's message is charged, or dropped
-- (modules/budgets/guard.ts says why).

create table portfolios (
  id bigint generated always as identity primary key,
  name text not null,
  messaging_limit integer,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  constraint portfolios_name_unique unique (name),
  constraint portfolios_messaging_limit_tier check (messaging_limit is null or messaging_limit in (250, 2000, 10000, 100000))
);

alter table senders
  add column messaging_limit integer,
  add column portfolio_id bigint references portfolios (id),
  add constraint senders_messaging_limit_tier check (messaging_limit is null or messaging_limit in (250, 2000, 10000, 100000));
create index senders_portfolio on senders (portfolio_id) where portfolio_id is not null;

create table messaging_budgets (
  budget text primary key,
  created_at timestamptz not null default now()
);

create table messaging_uses (
  id bigint generated always as identity primary key,
  budget text not null references messaging_budgets (budget),
  phone text not null,
  first_at timestamptz not null default now(),
  request_token uuid,
  held_until timestamptz
);
create index messaging_uses_budget_phone on messaging_uses (budget, phone, first_at);
create index messaging_uses_budget_oldest on messaging_uses (budget, first_at);
create index messaging_uses_held on messaging_uses (budget, held_until) where held_until is not null;
create index messaging_uses_held_token on messaging_uses (request_token) where held_until is not null;
