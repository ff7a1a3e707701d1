-- throttlekit's Postgres functions (format 1), created by `migrate` (src/postgres/schema.rs).
--
-- `throttlekit_v1_step` is one key's transition, line for line the Rust algorithms of
-- src/algorithms/ (and core/lua/): it takes the key's old state as arguments and returns the new
-- state with the reply, and reads no table. The store calls it from the `SET` of
-- `INSERT ... ON CONFLICT (key) DO UPDATE`, passing the conflicting row's columns, so the old state
-- is read only through the row the statement has locked: atomic under READ COMMITTED.
--
-- State columns: kind 0 = no state, 1 = a TAT in f (GCRA, shaper), 2 = a token bucket (f tokens,
-- a last), 3 = a counter (a start, n count), 4 = a sliding window ring in xs (tick, count pairs),
-- 5 = a sliding-window log in xs (stamp, units pairs, ascending). deadline: epoch ms after which
-- the state is gone (`now > deadline`). Floats are IEEE doubles, as in Rust and Lua: every
-- operation below is in the order of docs/semantics.md, so the decisions are the same bits.
--
-- op: 0 check, 1 forecast, 2 peek, 3 reserve (shaper), 4 lease (p[5] want, p[6] lifetime_ms),
-- 5 give back (cost = the units, p[6] the grant's reset_at), as src/lease/grant.rs. algo and p (the strategy's parameters,
-- derived values computed once in Rust so they are the same bits):
--   1 GCRA          p = {t, tau, limit}
--   2 token bucket  p = {capacity, refill_per_ms}
--   3 fixed window  p = {limit, window_ms}
--   4 sliding       p = {limit, window_ms, buckets, w}
--   5 log           p = {limit, window_ms}
--   6 period        p = {limit, start, end} (a quota's calendar or fixed period, from Rust)
--   7 shaper        p = {t, max_queue_ms}
-- r (the reply): {allowed, limit, remaining, reset_at, retry_after_ms} for a decision,
-- {accepted, delay_ms} for a reservation, {granted, limit, reset_at, retry_after_ms,
-- expires_in_ms} for a lease or a give-back.

CREATE OR REPLACE FUNCTION throttlekit_v1_ceil(v float8) RETURNS bigint
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
  SELECT CASE WHEN v <> v THEN 0
              WHEN v >= 9223372036854775807::float8 THEN 9223372036854775807
              WHEN v <= -9223372036854775808::float8 THEN -9223372036854775808
              ELSE ceil(v)::bigint END
$$;

CREATE OR REPLACE FUNCTION throttlekit_v1_floor(v float8) RETURNS bigint
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
  SELECT CASE WHEN v <> v THEN 0
              WHEN v >= 9223372036854775807::float8 THEN 9223372036854775807
              WHEN v <= -9223372036854775808::float8 THEN -9223372036854775808
              ELSE floor(v)::bigint END
$$;

CREATE OR REPLACE FUNCTION throttlekit_v1_add(x bigint, y bigint) RETURNS bigint
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
  SELECT CASE WHEN y > 0 AND x > 9223372036854775807 - y THEN 9223372036854775807
              WHEN y < 0 AND x < -9223372036854775808 - y THEN -9223372036854775808
              ELSE x + y END
$$;

-- The epoch ms of the server's clock now (Redis's TIME, in ms): read inside the step, which the
-- statement runs after it has locked the row.
CREATE OR REPLACE FUNCTION throttlekit_v1_now() RETURNS bigint
LANGUAGE sql VOLATILE AS $$
  SELECT floor(extract(epoch FROM clock_timestamp()) * 1000)::bigint
$$;

CREATE OR REPLACE FUNCTION throttlekit_v1_step(
  kind smallint, f float8, a bigint, n bigint, xs bigint[], deadline bigint,
  now_ms bigint, op smallint, algo smallint, p float8[], cost bigint,
  OUT o_kind smallint, OUT o_f float8, OUT o_a bigint, OUT o_n bigint, OUT o_xs bigint[],
  OUT o_deadline bigint, OUT o_r bigint[])
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
  now_i bigint := coalesce(now_ms, throttlekit_v1_now());
  now_f float8 := now_i::float8;
  do_commit boolean := op = 0 OR op = 3;
  allowed boolean;
  ttl bigint;
  lim bigint;
  -- GCRA, shaper
  stored float8; tat float8; inc float8; new_tat float8; allow_at float8; rem bigint;
  -- token bucket
  tokens float8; left_t float8; elapsed float8;
  -- counters
  w_start bigint; w_end bigint; cnt bigint; new_cnt bigint;
  -- sliding window
  w float8; c float8; weight float8; tick bigint; len bigint; b bigint; s bigint;
  t bigint; sm bigint; oldest bigint; cur bigint; est float8; after float8; d float8; idx int;
  -- log
  horizon bigint; live_from int; total bigint; rank bigint; seen bigint; i int; placed boolean;
  stamp_o bigint; nx bigint[];
  -- lease
  st record; want bigint; units bigint; avail bigint;
BEGIN
  -- Expiry: a state past its deadline is gone for good, whatever this op decides.
  IF kind <> 0 AND now_i > deadline THEN
    kind := 0;
  END IF;
  IF kind = 0 THEN
    f := NULL; a := NULL; n := NULL; xs := NULL; deadline := NULL;
  END IF;
  o_kind := kind; o_f := f; o_a := a; o_n := n; o_xs := xs; o_deadline := deadline;

  IF op = 4 THEN
    -- A lease (grant.rs `lease`): `want` units, else the units still admissible when more than
    -- `cost`, else `cost`; the largest the strategy admits, committed once.
    want := p[5]::bigint;
    SELECT * INTO st FROM throttlekit_v1_step(kind, f, a, n, xs, deadline, now_i, 1::smallint, algo, p, want);
    units := CASE WHEN st.o_r[1] = 1 THEN want ELSE 0 END;
    IF units = 0 AND want > cost THEN
      avail := greatest(st.o_r[3], 0);
      IF avail > cost AND avail < want THEN
        SELECT * INTO st FROM throttlekit_v1_step(kind, f, a, n, xs, deadline, now_i, 1::smallint, algo, p, avail);
        IF st.o_r[1] = 1 THEN units := avail; END IF;
      END IF;
      IF units = 0 THEN
        SELECT * INTO st FROM throttlekit_v1_step(kind, f, a, n, xs, deadline, now_i, 1::smallint, algo, p, cost);
        IF st.o_r[1] = 1 THEN units := cost; END IF;
      END IF;
    END IF;
    IF units = 0 THEN
      o_r := ARRAY[0, st.o_r[2], st.o_r[4], st.o_r[5], 0];
      RETURN;
    END IF;
    SELECT * INTO st FROM throttlekit_v1_step(kind, f, a, n, xs, deadline, now_i, 0::smallint, algo, p, units);
    o_kind := st.o_kind; o_f := st.o_f; o_a := st.o_a; o_n := st.o_n; o_xs := st.o_xs; o_deadline := st.o_deadline;
    o_r := ARRAY[units, st.o_r[2], st.o_r[4], 0,
                 greatest(CASE WHEN p[6] = 0 THEN throttlekit_v1_add(st.o_r[4], -now_i) ELSE p[6]::bigint END, 0)];
    RETURN;
  END IF;

  IF op = 5 THEN
    -- A give-back (grant.rs `give_back`) of `cost` units of a grant that resets at p[6].
    o_r := ARRAY[0, 0, 0, 0, 0];
    IF algo = 1 AND kind = 1 AND f > now_f THEN
      new_tat := f - cost::float8 * p[1];
      IF new_tat < now_f THEN new_tat := now_f; END IF;
      o_f := new_tat;
      o_deadline := throttlekit_v1_add(now_i, greatest(throttlekit_v1_ceil(new_tat - now_f), 1));
      o_r := ARRAY[cost, 0, 0, 0, 0];
    ELSIF algo = 2 THEN
      IF kind = 2 THEN
        tokens := least(p[1], f + greatest(now_f - a::float8, 0.0) * p[2]);
      ELSE
        tokens := p[1];
      END IF;
      o_kind := 2; o_f := least(p[1], tokens + cost::float8); o_a := now_i; o_n := NULL; o_xs := NULL;
      o_deadline := throttlekit_v1_add(now_i, greatest(throttlekit_v1_ceil(p[1] / p[2]), 1));
      o_r := ARRAY[cost, 0, 0, 0, 0];
    ELSIF (algo = 3 OR algo = 6) AND kind = 3 AND n > 0 THEN
      SELECT * INTO st FROM throttlekit_v1_step(kind, f, a, n, xs, deadline, now_i, 2::smallint, algo, p, 1);
      IF st.o_r[4] = p[6]::bigint AND st.o_r[2] - st.o_r[3] = least(n, st.o_r[2]) THEN
        o_n := greatest(n - cost, 0);
        o_deadline := throttlekit_v1_add(now_i, greatest(throttlekit_v1_add(p[6]::bigint, -now_i), 1));
        o_r := ARRAY[cost, 0, 0, 0, 0];
      END IF;
    END IF;
    RETURN;
  END IF;

  IF algo = 1 OR algo = 7 THEN
    -- GCRA (src/algorithms/gcra.rs) and the shaper (leaky_bucket.rs): a TAT.
    stored := CASE WHEN kind = 1 THEN f ELSE now_f END;
    tat := CASE WHEN stored > now_f THEN stored ELSE now_f END;
    IF algo = 7 THEN
      inc := p[1] * cost::float8;
      IF tat - now_f > p[2] THEN
        o_r := ARRAY[0, greatest(throttlekit_v1_ceil(tat - now_f - p[2]), 1)];
        RETURN;
      END IF;
      new_tat := tat + inc;
      o_kind := 1; o_f := new_tat; o_a := NULL; o_n := NULL; o_xs := NULL;
      o_deadline := throttlekit_v1_add(now_i, greatest(throttlekit_v1_ceil(new_tat - now_f), 1));
      o_r := ARRAY[1, throttlekit_v1_ceil(tat - now_f)];
      RETURN;
    END IF;
    lim := p[3]::bigint;
    IF op = 2 THEN
      rem := greatest(throttlekit_v1_floor((p[2] - (tat - now_f)) / p[1]), 0);
      o_r := ARRAY[(rem >= 1)::int, lim, rem, throttlekit_v1_ceil(tat),
                   CASE WHEN rem >= 1 THEN 0 ELSE greatest(throttlekit_v1_ceil(tat + p[1] - p[2] - now_f), 1) END];
      RETURN;
    END IF;
    inc := p[1] * cost::float8;
    new_tat := tat + inc;
    allow_at := new_tat - p[2];
    IF now_f < allow_at THEN
      o_r := ARRAY[0, lim, greatest(throttlekit_v1_floor((p[2] - (tat - now_f)) / p[1]), 0),
                   throttlekit_v1_ceil(tat), throttlekit_v1_ceil(allow_at - now_f)];
      RETURN;
    END IF;
    o_r := ARRAY[1, lim, greatest(throttlekit_v1_floor((p[2] - (new_tat - now_f)) / p[1]), 0),
                 throttlekit_v1_ceil(new_tat), 0];
    IF do_commit THEN
      o_kind := 1; o_f := new_tat; o_a := NULL; o_n := NULL; o_xs := NULL;
      o_deadline := throttlekit_v1_add(now_i, greatest(throttlekit_v1_ceil(new_tat - now_f), 1));
    END IF;
    RETURN;
  END IF;

  IF algo = 2 THEN
    -- Token bucket (token_bucket.rs): p = {capacity, refill_per_ms}.
    lim := p[1]::bigint;
    IF kind = 2 THEN
      elapsed := greatest(now_f - a::float8, 0.0);
      tokens := least(p[1], f + elapsed * p[2]);
    ELSE
      tokens := p[1];
    END IF;
    IF op = 2 THEN
      o_r := ARRAY[(tokens >= 1.0)::int, lim, greatest(throttlekit_v1_floor(tokens), 0),
                   throttlekit_v1_add(now_i, throttlekit_v1_ceil((p[1] - tokens) / p[2])),
                   CASE WHEN tokens >= 1.0 THEN 0 ELSE greatest(throttlekit_v1_ceil((1.0 - tokens) / p[2]), 1) END];
      RETURN;
    END IF;
    IF tokens >= cost::float8 THEN
      left_t := tokens - cost::float8;
      o_r := ARRAY[1, lim, greatest(throttlekit_v1_floor(left_t), 0),
                   throttlekit_v1_add(now_i, throttlekit_v1_ceil((p[1] - left_t) / p[2])), 0];
      IF do_commit THEN
        o_kind := 2; o_f := left_t; o_a := now_i; o_n := NULL; o_xs := NULL;
        o_deadline := throttlekit_v1_add(now_i, greatest(throttlekit_v1_ceil(p[1] / p[2]), 1));
      END IF;
    ELSE
      o_r := ARRAY[0, lim, greatest(throttlekit_v1_floor(tokens), 0),
                   throttlekit_v1_add(now_i, throttlekit_v1_ceil((p[1] - tokens) / p[2])),
                   greatest(throttlekit_v1_ceil((cost::float8 - tokens) / p[2]), 1)];
    END IF;
    RETURN;
  END IF;

  IF algo = 3 OR algo = 6 THEN
    -- A counter over a period (period_counter.rs): the fixed window's epoch-aligned window, or
    -- a quota's period as Rust computed it.
    lim := p[1]::bigint;
    IF algo = 3 THEN
      w_start := now_i - (((now_i % p[2]::bigint) + p[2]::bigint) % p[2]::bigint);
      w_end := w_start + p[2]::bigint;
    ELSE
      w_start := p[2]::bigint; w_end := p[3]::bigint;
    END IF;
    cnt := CASE WHEN kind = 3 AND a = w_start THEN n ELSE 0 END;
    IF op = 2 THEN
      o_r := ARRAY[(cnt < lim)::int, lim, greatest(lim - cnt, 0), w_end,
                   CASE WHEN cnt < lim THEN 0 ELSE greatest(w_end - now_i, 1) END];
      RETURN;
    END IF;
    new_cnt := throttlekit_v1_add(cnt, cost);
    IF new_cnt <= lim THEN
      o_r := ARRAY[1, lim, lim - new_cnt, w_end, 0];
      IF do_commit THEN
        o_kind := 3; o_f := NULL; o_a := w_start; o_n := new_cnt; o_xs := NULL;
        o_deadline := throttlekit_v1_add(now_i, greatest(w_end - now_i, 1));
      END IF;
    ELSE
      o_r := ARRAY[0, lim, greatest(lim - cnt, 0), w_end, greatest(w_end - now_i, 1)];
    END IF;
    RETURN;
  END IF;

  IF algo = 4 THEN
    -- Sliding window (sliding_window.rs): p = {limit, window_ms, buckets, w}; a ring of
    -- buckets + 1 (tick, count) slots, slot tick % (buckets + 1).
    lim := p[1]::bigint; b := p[3]::bigint; w := p[4]; len := b + 1;
    c := floor(now_f / w);
    weight := least(greatest((w - (now_f - c * w)) / w, 0.0), 1.0);
    tick := c::bigint;
    IF kind <> 4 OR coalesce(array_length(xs, 1), 0) <> 2 * len THEN
      xs := NULL;
    END IF;
    sm := 0; oldest := 0; cur := 0;
    IF xs IS NOT NULL THEN
      t := tick - b + 1;
      WHILE t <= tick LOOP
        s := ((t % len) + len) % len;
        IF xs[2 * s + 1] = t THEN sm := throttlekit_v1_add(sm, xs[2 * s + 2]); END IF;
        t := t + 1;
      END LOOP;
      s := (((tick - b) % len) + len) % len;
      IF xs[2 * s + 1] = tick - b THEN oldest := xs[2 * s + 2]; END IF;
      s := ((tick % len) + len) % len;
      IF xs[2 * s + 1] = tick THEN cur := xs[2 * s + 2]; END IF;
    END IF;
    est := sm::float8 + oldest::float8 * weight;
    IF op = 2 THEN
      allowed := est + 1.0 <= p[1];
      cost := 1;
    ELSE
      allowed := est + cost::float8 <= p[1];
    END IF;
    IF op <> 2 AND allowed THEN
      after := est + cost::float8;
      o_r := ARRAY[1, lim, greatest(throttlekit_v1_floor(p[1] - after), 0),
                   throttlekit_v1_ceil((tick::float8 + 1.0) * w + p[2]), 0];
      IF do_commit THEN
        IF xs IS NULL THEN
          xs := ARRAY(SELECT CASE WHEN g % 2 = 1 THEN -9223372036854775808 ELSE 0 END
                      FROM generate_series(1, (2 * len)::int) g);
        END IF;
        idx := (((tick % len) + len) % len)::int;
        xs[2 * idx + 1] := tick;
        xs[2 * idx + 2] := throttlekit_v1_add(cur, cost);
        o_kind := 4; o_f := NULL; o_a := NULL; o_n := NULL; o_xs := xs;
        o_deadline := throttlekit_v1_add(now_i, greatest(throttlekit_v1_ceil(p[2] + w), 1));
      END IF;
      RETURN;
    END IF;
    IF allowed THEN
      t := 0;
    ELSE
      d := est + cost::float8 - p[1];
      IF oldest > 0 AND d <= oldest::float8 * weight THEN
        t := greatest(throttlekit_v1_ceil(d * w / oldest::float8), 1);
      ELSE
        t := greatest(throttlekit_v1_ceil((tick::float8 + 1.0) * w - now_f), 1);
      END IF;
    END IF;
    o_r := ARRAY[allowed::int, lim, greatest(throttlekit_v1_floor(p[1] - est), 0),
                 throttlekit_v1_ceil((tick::float8 + 1.0) * w + p[2]), t];
    RETURN;
  END IF;

  IF algo = 5 THEN
    -- Sliding-window log (sliding_window_log.rs): ascending (stamp, units) runs; a stamp at or
    -- before now - window_ms is dead.
    lim := p[1]::bigint;
    horizon := throttlekit_v1_add(now_i, -p[2]::bigint);
    IF kind <> 5 THEN xs := ARRAY[]::bigint[]; END IF;
    live_from := 1;
    WHILE live_from <= coalesce(array_length(xs, 1), 0) AND xs[live_from] <= horizon LOOP
      live_from := live_from + 2;
    END LOOP;
    total := 0;
    FOR i IN live_from..coalesce(array_length(xs, 1), 0) BY 2 LOOP
      total := throttlekit_v1_add(total, xs[i + 1]);
    END LOOP;
    oldest := CASE WHEN live_from <= coalesce(array_length(xs, 1), 0) THEN xs[live_from] END;
    IF op = 2 THEN
      cost := 1;
      allowed := total < lim;
    ELSE
      allowed := throttlekit_v1_add(total, cost) <= lim;
    END IF;
    IF NOT allowed THEN
      IF total = 0 THEN
        t := greatest(p[2]::bigint, 1);
      ELSE
        rank := least(greatest(throttlekit_v1_add(total, cost) - lim, 1), total);
        seen := 0; stamp_o := oldest;
        FOR i IN live_from..array_length(xs, 1) BY 2 LOOP
          seen := seen + xs[i + 1];
          IF seen >= rank THEN stamp_o := xs[i]; EXIT; END IF;
        END LOOP;
        t := greatest(stamp_o + p[2]::bigint - now_i, 1);
      END IF;
      o_r := ARRAY[0, lim, greatest(lim - total, 0), coalesce(oldest, now_i) + p[2]::bigint, t];
      RETURN;
    END IF;
    IF op = 2 THEN
      o_r := ARRAY[1, lim, greatest(lim - total, 0), coalesce(oldest, now_i) + p[2]::bigint, 0];
      RETURN;
    END IF;
    o_r := ARRAY[1, lim, lim - throttlekit_v1_add(total, cost),
                 least(coalesce(oldest, now_i), now_i) + p[2]::bigint, 0];
    IF do_commit THEN
      nx := ARRAY[]::bigint[]; placed := false;
      FOR i IN live_from..coalesce(array_length(xs, 1), 0) BY 2 LOOP
        IF NOT placed AND xs[i] = now_i THEN
          nx := nx || ARRAY[now_i, throttlekit_v1_add(xs[i + 1], cost)]; placed := true;
        ELSE
          IF NOT placed AND xs[i] > now_i THEN
            nx := nx || ARRAY[now_i, cost]; placed := true;
          END IF;
          nx := nx || ARRAY[xs[i], xs[i + 1]];
        END IF;
      END LOOP;
      IF NOT placed THEN nx := nx || ARRAY[now_i, cost]; END IF;
      o_kind := 5; o_f := NULL; o_a := NULL; o_n := NULL; o_xs := nx;
      o_deadline := throttlekit_v1_add(now_i, p[2]::bigint);
    END IF;
    RETURN;
  END IF;

  RAISE EXCEPTION 'throttlekit: unknown algorithm %', algo USING ERRCODE = '22023';
END
$$;

-- A multi-dimensional check or lease (src/store/multi_apply.rs): locks every dimension's row in
-- ascending key order (two multi calls cannot deadlock), plans every dimension at one `now`,
-- then commits what the rule admits (rule 0 all, 1 any) and writes back the expiry of the rest;
-- one statement, so all of it commits or none does. Dimension i's parameters are
-- p[4i - 3 .. 4i]. Without `wants`, a check: a dimension plans a forecast of its cost and commits
-- a check. With `wants` (the units asked, at least the cost) and `lifetimes` (ms, 0: until the
-- reset), a lease: a dimension plans as `lease::grant::plan` (its want, else the units it still
-- admits when more than its cost, else its cost) and commits a lease of those units (op 4).
-- Returns {admitted, then 5 reply fields per dimension}, then for a lease the 5 grant fields per
-- dimension of what it committed (zeros for a dimension that did not).
DROP FUNCTION IF EXISTS throttlekit_v1_multi(regclass, text[], smallint[], float8[], bigint[], smallint, bigint);
CREATE OR REPLACE FUNCTION throttlekit_v1_multi(
  tbl regclass, keys text[], algos smallint[], p float8[], costs bigint[], rule smallint, now_ms bigint,
  wants bigint[] DEFAULT NULL, lifetimes bigint[] DEFAULT NULL)
RETURNS bigint[]
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
  k int := array_length(keys, 1);
  ord int[];
  i int;
  now_i bigint;
  st record;
  pi float8[];
  sel text := 'SELECT kind, f, a, n, xs, deadline FROM %s WHERE key = $1';
  go boolean[];
  units bigint[];
  want bigint;
  avail bigint;
  admitted boolean;
  res bigint[];
  grants bigint[] := ARRAY[]::bigint[];
  out_ record;
  alt record;
BEGIN
  ord := ARRAY(SELECT o FROM unnest(keys) WITH ORDINALITY u(key, o) ORDER BY key COLLATE "C");
  FOREACH i IN ARRAY ord LOOP
    EXECUTE format('INSERT INTO %s (key, kind) VALUES ($1, 0) ON CONFLICT (key) DO NOTHING', tbl) USING keys[i];
  END LOOP;
  FOREACH i IN ARRAY ord LOOP
    EXECUTE format('SELECT 1 FROM %s WHERE key = $1 FOR UPDATE', tbl) USING keys[i];
  END LOOP;
  now_i := coalesce(now_ms, throttlekit_v1_now());
  res := ARRAY[0::bigint];
  go := array_fill(false, ARRAY[k]);
  units := array_fill(0::bigint, ARRAY[k]);
  FOR i IN 1..k LOOP
    EXECUTE format(sel, tbl) INTO st USING keys[i];
    pi := p[4 * i - 3 : 4 * i];
    want := CASE WHEN wants IS NULL THEN costs[i] ELSE greatest(wants[i], costs[i]) END;
    SELECT * INTO out_ FROM throttlekit_v1_step(st.kind, st.f, st.a, st.n, st.xs, st.deadline,
                                                now_i, 1::smallint, algos[i], pi, want);
    IF out_.o_r[1] = 1 THEN
      units[i] := want;
    ELSIF want > costs[i] THEN
      avail := greatest(out_.o_r[3], 0);
      IF avail > costs[i] AND avail < want THEN
        SELECT * INTO alt FROM throttlekit_v1_step(st.kind, st.f, st.a, st.n, st.xs, st.deadline,
                                                  now_i, 1::smallint, algos[i], pi, avail);
        IF alt.o_r[1] = 1 THEN units[i] := avail; out_ := alt; END IF;
      END IF;
      IF units[i] = 0 THEN
        SELECT * INTO out_ FROM throttlekit_v1_step(st.kind, st.f, st.a, st.n, st.xs, st.deadline,
                                                    now_i, 1::smallint, algos[i], pi, costs[i]);
        IF out_.o_r[1] = 1 THEN units[i] := costs[i]; END IF;
      END IF;
    END IF;
    res := res || out_.o_r;
    go[i] := out_.o_r[1] = 1;
  END LOOP;
  IF rule = 0 THEN
    admitted := true = ALL(go);
    IF NOT admitted THEN go := array_fill(false, ARRAY[k]); END IF;
  ELSE
    admitted := true = ANY(go);
  END IF;
  res[1] := admitted::int;
  FOR i IN 1..k LOOP
    EXECUTE format(sel, tbl) INTO st USING keys[i];
    pi := p[4 * i - 3 : 4 * i];
    IF wants IS NOT NULL AND go[i] THEN
      SELECT * INTO out_ FROM throttlekit_v1_step(st.kind, st.f, st.a, st.n, st.xs, st.deadline, now_i,
                                                  4::smallint, algos[i],
                                                  pi || ARRAY[units[i]::float8, lifetimes[i]::float8], units[i]);
      grants := grants || out_.o_r;
    ELSE
      SELECT * INTO out_ FROM throttlekit_v1_step(st.kind, st.f, st.a, st.n, st.xs, st.deadline, now_i,
                                                  CASE WHEN go[i] THEN 0 ELSE 1 END::smallint,
                                                  algos[i], pi, costs[i]);
      IF wants IS NOT NULL THEN
        grants := grants || ARRAY[0::bigint, 0, 0, 0, 0];
      END IF;
    END IF;
    EXECUTE format('UPDATE %s SET kind = $2, f = $3, a = $4, n = $5, xs = $6, deadline = $7 WHERE key = $1', tbl)
      USING keys[i], out_.o_kind, out_.o_f, out_.o_a, out_.o_n, out_.o_xs, out_.o_deadline;
  END LOOP;
  RETURN res || grants;
END
$$;
