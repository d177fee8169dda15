-- why: a single send to a tiered sender made 13 statements to the database (issue 31 §4): its messaging
-- limit's hold was a transaction of nine (begin, the budget's row made and locked, uses aged out, expired
-- holds resolved, the count, the phones counted, the uses recorded, commit) and a settle after every
-- charge. The take is now this one function (modules/budgets/guard.ts is its only caller), and a charged
-- request's held uses count as kept, so a send that charged needs no settle: it is settled lazily, when
-- its hold runs out (the next taker keeps it, since its message exists), and only a request that did not
-- charge drops its held uses at once.
--
-- messaging_take locks the budget's row, clears what no longer counts, counts the recipients of the
-- last 24 hours and takes room for `phones` in order: a phone counted already fits, a new one takes room
-- while there is some; with `prefix` (a campaign) none fits after the first that does not. It records a
-- use for each phone that fits and has no kept use yet: held until `hold_seconds` from now under
-- `token`, or kept (`token` null: a campaign, charged in the caller's transaction). `at` is the
-- service's clock (null: the database's clock once the lock is taken). Answers the fit of each phone, in order, and
-- the budget's use before the take (`used`, `frees_at`: when its oldest recipient frees).

create function messaging_take(
  budget_key text, tier integer, phones text[], token uuid, hold_seconds integer, prefix boolean, at timestamptz
) returns table (fits boolean[], used integer, frees_at timestamptz) language plpgsql as $$
declare
  now_at timestamptz;
  since timestamptz;
begin
  -- Its callers never pass these; a NULL would misalign the answers or keep a held use for good.
  if tier is null or phones is null or array_position(phones, null) is not null then
    raise exception 'messaging_take: tier and phones must not be null';
  end if;
  if token is not null and hold_seconds is null then
    raise exception 'messaging_take: a held use needs its hold_seconds';
  end if;
  insert into messaging_budgets (budget) values (budget_key) on conflict (budget) do nothing;
  perform 1 from messaging_budgets b where b.budget = budget_key for update;
  -- The time after the lock (the service's clock when it sets one): a take that waited for the lock, or
  -- runs late in a campaign's transaction, records its uses when they are made.
  now_at := coalesce(at, clock_timestamp());
  since := now_at - interval '24 hours';
  delete from messaging_uses u where u.budget = budget_key and u.first_at <= since;
  -- Held uses whose hold ran out: their request died between hold and settle, or charged and left its
  -- settling to this. Kept if it charged its message, dropped if not.
  with expired as (
    select u.id, u.request_token from messaging_uses u
    where u.budget = budget_key and u.held_until is not null and u.held_until < now_at
  ), kept as (
    update messaging_uses u set held_until = null
    from expired e where u.id = e.id and exists (select 1 from messages m where m.request_token = e.request_token)
    returning u.id
  )
  delete from messaging_uses u where u.id in (select id from expired) and u.id not in (select id from kept);

  select count(*)::int, min(p.last) + interval '24 hours' into used, frees_at
  from (select max(u.first_at) as last from messaging_uses u where u.budget = budget_key and u.first_at > since group by u.phone) p;

  with input as (
    select i.phone, i.ord from unnest(phones) with ordinality as i(phone, ord)
  ), firsts as (
    select i.phone, min(i.ord) as first_ord from input i group by i.phone
  ), known as (
    -- A phone counted in the last 24 hours; kept: by a campaign, a settled send, or a held send whose
    -- request charged its message.
    select u.phone,
           bool_or(u.held_until is null or exists (select 1 from messages m where m.request_token = u.request_token)) as kept
    from messaging_uses u
    where u.budget = budget_key and u.phone = any(phones) and u.first_at > since
    group by u.phone
  ), ranked as (
    -- New phones take room in the order they first appear.
    select f.phone, k.phone is not null as counted, coalesce(k.kept, false) as kept,
           row_number() over (partition by k.phone is null order by f.first_ord) as new_rank
    from firsts f left join known k on k.phone = f.phone
  ), judged as (
    select i.ord, r.phone, r.counted, r.kept, r.counted or r.new_rank <= tier - used as alone
    from input i join ranked r on r.phone = i.phone
  ), fitted as (
    select j.*, case when prefix then bool_and(j.alone) over (order by j.ord) else j.alone end as fit from judged j
  ), recorded as (
    insert into messaging_uses (budget, phone, first_at, request_token, held_until)
    select distinct on (f.phone) budget_key, f.phone, now_at, token,
           case when token is null then null else now_at + make_interval(secs => hold_seconds) end
    from fitted f where f.fit and not f.kept
    order by f.phone
  )
  select coalesce(array_agg(f.fit order by f.ord), '{}') into fits from fitted f;
  return next;
end $$;
