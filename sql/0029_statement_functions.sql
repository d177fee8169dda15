-- why: behind PgBouncer in transaction mode no statement can be prepared, so PostgreSQL parsed and
-- planned every statement each time it ran (over half of its CPU in the lifecycle benchmark). A
-- statement the service runs again and again is kept instead as a PL/pgSQL function whose body is that
-- statement (`return query <statement>`): the server keeps the plan of a function's statement for the
-- session, whichever client uses it, and the call is parsed and planned in microseconds. This installs
-- one such function (src/db/statement-functions.ts calls it), under a lock so that instances installing
-- the same one at once do not collide, and answers the column definition list its callers use.
create function statement_function_install(
  p_name text,
  p_body text,
  p_arg_types oid[],
  p_column_names text[],
  p_column_types oid[],
  p_column_tables oid[],
  p_column_numbers int[]
) returns text
language plpgsql as $install$
declare
  v_args text;
  v_columns text;
begin
  if p_name !~ '^stmt_[0-9a-f]{32}$' then
    raise exception 'statement function name % is not stmt_ and 32 hexadecimal digits', p_name;
  end if;
  -- Pseudo-types (void, record, unknown...) cannot be a function's argument or a column of its result.
  if exists (select 1 from pg_type where oid = any(p_arg_types || p_column_types) and typtype = 'p')
     or cardinality(p_column_names) = 0 then
    raise exception 'statement % cannot be a function: it answers no rows or uses a pseudo-type', p_name;
  end if;
  select coalesce(string_agg(format_type(t, null), ', ' order by i), '') into v_args
  from unnest(p_arg_types) with ordinality as a(t, i);
  -- A column read from a table or view is described to the client by its base type; its own type (a
  -- domain, such as information_schema's sql_identifier) is the one the function must declare.
  select string_agg(format('%I %s', c.n, format_type(coalesce(a.atttypid, c.t), null)), ', ' order by c.i) into v_columns
  from unnest(p_column_names, p_column_types, p_column_tables, p_column_numbers) with ordinality as c(n, t, tbl, num, i)
  left join pg_attribute a on a.attrelid = c.tbl and a.attnum = c.num and c.tbl <> 0 and c.num > 0 and not a.attisdropped;
  perform pg_advisory_xact_lock(7240010, hashtext(p_name));
  if to_regprocedure(format('%I(%s)', p_name, v_args)) is null then
    -- use_column: a name in the statement that could also be a PL/pgSQL variable (FOUND) is its column.
    execute format(
      'create function %I(%s) returns setof record language plpgsql volatile as %L',
      p_name, v_args, E'#variable_conflict use_column\nbegin\n  return query ' || p_body || E';\nend'
    );
  end if;
  return v_columns;
end
$install$;
