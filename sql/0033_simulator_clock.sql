-- The simulator's traffic rules take their time from the service's clock (issue 29): `at`, the clock's
-- time, is the moment a hand-off is admitted or throttled; null (production) keeps the database's
-- clock_timestamp() read after the locks, one clock for every instance. A test clock passes its own
-- time, so a sender's second and a recipient's gap move only when the test moves them. Otherwise the
-- same as 0017: the old signature goes (providers/simulator/rules.ts is its only caller).

drop function simulator_admit(text, integer, text, integer);

create function simulator_admit(sender_key text, per_second integer, to_phone text, gap_ms integer, at timestamptz)
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
  now_at := coalesce(at, clock_timestamp());
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
