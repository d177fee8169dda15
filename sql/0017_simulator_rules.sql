-- The simulator plays by WhatsApp's traffic rules (issue 17), kept in the database like its customer
-- windows so that every instance on one database shares them: a sender takes at most
-- SIM_RATE_PER_SECOND messages in each second of the database's clock (130429 beyond it), and a
-- recipient gets at most one message every SIM_RECIPIENT_GAP_MS (131056 within it). The simulator asks
-- only when one of them is set.

create table simulator_sender_second (
  sender text primary key,
  second bigint not null,   -- the second (since the epoch) being counted
  taken integer not null    -- messages accepted in it
);

create table simulator_recipient_gap (
  phone text primary key,
  free_at timestamptz not null  -- when it may have its next message
);
create index simulator_recipient_gap_free on simulator_recipient_gap (free_at);

-- May `to_phone` have a message from `sender_key` now? Both rules are checked under their row locks
-- (sender first, so two hand-offs never wait on each other in a circle) and taken together or not at
-- all. Answers ('rate', ms to the next second) or ('gap', ms until the recipient is free) when
-- refused, (null, 0) when taken. Each admission forgets up to two recipients long free, so the table
-- holds about the recipients of the last gap.
create function simulator_admit(sender_key text, per_second integer, to_phone text, gap_ms integer)
returns table (refused text, wait_ms integer) language plpgsql as $$
declare
  row_second bigint;
  row_taken integer;
  row_free timestamptz;
  now_at timestamptz;
  at_ms bigint;
begin
  if per_second > 0 then
    insert into simulator_sender_second values (sender_key, 0, 0) on conflict do nothing;
    select s.second, s.taken into row_second, row_taken from simulator_sender_second s where s.sender = sender_key for update;
  end if;
  if gap_ms > 0 then
    insert into simulator_recipient_gap values (to_phone, '-infinity') on conflict do nothing;
    select g.free_at into row_free from simulator_recipient_gap g where g.phone = to_phone for update;
  end if;
  -- The time after the locks: a hand-off that waited for one is counted when it gets it.
  now_at := clock_timestamp();
  at_ms := floor(extract(epoch from now_at) * 1000);
  if per_second > 0 and row_second = at_ms / 1000 and row_taken >= per_second then
    return query select 'rate'::text, (1000 - at_ms % 1000)::integer;
    return;
  end if;
  if gap_ms > 0 and row_free > now_at then
    return query select 'gap'::text, ceil(extract(epoch from row_free - now_at) * 1000)::integer;
    return;
  end if;
  if per_second > 0 then
    update simulator_sender_second s
    set taken = case when s.second = at_ms / 1000 then s.taken + 1 else 1 end, second = at_ms / 1000
    where s.sender = sender_key;
  end if;
  if gap_ms > 0 then
    update simulator_recipient_gap g set free_at = now_at + gap_ms * interval '1 millisecond' where g.phone = to_phone;
    delete from simulator_recipient_gap
    where phone in (select g.phone from simulator_recipient_gap g where g.free_at < now_at limit 2 for update skip locked);
  end if;
  return query select null::text, 0;
end
$$;
