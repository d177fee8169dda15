-- The pace takes its time from the service's clock (issue 29): `at`, the clock's time, is the moment a
-- reservation or a throttle happens; null (production) keeps the database's clock_timestamp(), one
-- clock for every instance. A test clock passes its own time, so slots and gaps move only when the
-- test moves them. Otherwise the same as 0018: the old signatures go (pace.ts is their only caller).

drop function pace_take(text, double precision, integer, text[], integer);
drop function pace_throttled(text, double precision, text, text, integer);

create function pace_take(sender_key text, ceiling double precision, gap_ms integer, phones text[], max_wait_ms integer, at timestamptz)
returns table (wait_ms double precision, slot boolean) language plpgsql as $$
declare
  now_at timestamptz := coalesce(at, clock_timestamp());
  row_pace sender_paces;
  step interval;
  next_slot timestamptz;
  recipient_at timestamptz;
  phone_i text;
begin
  insert into sender_paces (sender, next_at) values (sender_key, now_at) on conflict (sender) do nothing;
  select * into row_pace from sender_paces where sender = sender_key for update;
  step := make_interval(secs => 1.0 / greatest(pace_rate(row_pace, ceiling, now_at), 0.01));
  next_slot := greatest(row_pace.next_at, now_at);
  foreach phone_i in array phones loop
    recipient_at := null;
    if gap_ms > 0 then
      select next_at into recipient_at from recipient_paces where sender = sender_key and phone = phone_i for update;
    end if;
    if recipient_at > next_slot then
      wait_ms := extract(epoch from recipient_at - now_at) * 1000; slot := false;
      return next;
    elsif max_wait_ms is not null and next_slot - now_at > make_interval(secs => max_wait_ms / 1000.0) then
      wait_ms := extract(epoch from next_slot - now_at) * 1000; slot := false;
      return next;
    else
      if gap_ms > 0 then
        insert into recipient_paces (sender, phone, next_at) values (sender_key, phone_i, next_slot + make_interval(secs => gap_ms / 1000.0))
        on conflict (sender, phone) do update set next_at = excluded.next_at;
      end if;
      wait_ms := greatest(0, extract(epoch from next_slot - now_at) * 1000); slot := true;
      return next;
      next_slot := next_slot + step;
    end if;
  end loop;
  update sender_paces set next_at = next_slot where sender = sender_key;
end $$;

create function pace_throttled(sender_key text, ceiling double precision, scope text, phone_key text, retry_after_ms integer, at timestamptz)
returns void language plpgsql as $$
declare
  now_at timestamptz := coalesce(at, clock_timestamp());
  row_pace sender_paces;
begin
  if scope = 'recipient' then
    insert into recipient_paces (sender, phone, next_at) values (sender_key, phone_key, now_at + make_interval(secs => retry_after_ms / 1000.0))
    on conflict (sender, phone) do update set next_at = greatest(recipient_paces.next_at, excluded.next_at);
    return;
  end if;
  insert into sender_paces (sender, next_at) values (sender_key, now_at) on conflict (sender) do nothing;
  select * into row_pace from sender_paces where sender = sender_key for update;
  if row_pace.backed_off_at is null or row_pace.backed_off_at < now_at - interval '1 second' then
    update sender_paces
    set backed_off_rate = greatest(0.1, pace_rate(row_pace, ceiling, now_at) * 0.8), backed_off_at = now_at
    where sender = sender_key;
  end if;
  update sender_paces set next_at = greatest(next_at, now_at + make_interval(secs => retry_after_ms / 1000.0))
  where sender = sender_key;
  update recipient_paces set next_at = now_at where sender = sender_key and phone = phone_key and next_at > now_at;
end $$;
