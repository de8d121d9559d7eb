#!lua name=tollgate_v2

-- Tollgate admission counters, version 2. Loaded with FUNCTION LOAD REPLACE; every function
-- name carries the version, so replicas running two versions during a rolling deploy never
-- call each other's code. The rules are those of Tollgate's in-process counter store
-- (tollgate-governance `admission/memory.rs`); the Rust side documents them.
--
-- One hash per scope, fields:
--   spend, reserved   money, integer units of 1e-10 USD (only ever changed by HINCRBY with an
--                     exact decimal argument, or set from one, so storage stays exact int64)
--   dur               budget window period ('30d', '1h', ... absent = no window)
--   reset_at          next budget reset, ms since the Unix epoch
--   ws, wr, wt        rate window start (ms), requests and settled tokens in it
--   rt                tokens reserved by requests in flight
--   inf               requests in flight
--   add, rst          spend added / 1 when the window was reset since the last drain
-- The set KEYS[2] of every write lists the scope keys changed since the last drain.
-- A ticket key (one per request id and attempt) exists while its reservation is in flight; its
-- value, the record, is the JSON list [ticket key, cost, tokens, scope key...]: what undoing the
-- reservation takes. The sorted set KEYS[3] holds each record scored by the end of its lease: a
-- reservation still in flight at the end of its lease (its replica died) is released by the next
-- reservation of any replica, and its ticket becomes the tombstone 'x', so a late settlement
-- still charges the actual usage, once. The ticket key expires two leases after the
-- reservation; the record in the sorted set does not, so a release never depends on it.
--
-- A charge key (one per request id and attempt) records that the usage of a request admitted
-- while Redis was unreachable (on a replica's local fallback counters) has been added to the
-- scopes: a re-sent charge changes nothing. The fleet marker KEYS[4] of a checked reserve is
-- written once the fleet's scopes are seeded; a Redis restarted empty has lost it, and a
-- checked reserve then refuses with {0, 6} so the client seeds the scopes again first.
--
-- Time is the server's: redis.call('TIME'). Functions replicate their effects, so the clock
-- read is allowed.

local DAY = 86400000

local function int(x)
  return string.format('%d', x)
end

local function num(v)
  if v == false or v == nil then return nil end
  return tonumber(v)
end

local function now_ms()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end

-- Proleptic Gregorian calendar <-> days since 1970-01-01 (H. Hinnant's civil algorithms).
local function days_from_civil(y, m, d)
  if m <= 2 then y = y - 1 end
  local era = math.floor(y / 400)
  local yoe = y - era * 400
  local mp = (m + 9) % 12
  local doy = math.floor((153 * mp + 2) / 5) + d - 1
  local doe = yoe * 365 + math.floor(yoe / 4) - math.floor(yoe / 100) + doy
  return era * 146097 + doe - 719468
end

local function civil_from_days(z)
  z = z + 719468
  local era = math.floor(z / 146097)
  local doe = z - era * 146097
  local yoe = math.floor((doe - math.floor(doe / 1460) + math.floor(doe / 36524)
    - math.floor(doe / 146096)) / 365)
  local doy = doe - (365 * yoe + math.floor(yoe / 4) - math.floor(yoe / 100))
  local mp = math.floor((5 * doy + 2) / 153)
  local m = mp + 3
  if mp >= 10 then m = mp - 9 end
  local y = yoe + era * 400
  if m <= 2 then y = y + 1 end
  return y, m
end

-- The standardised reset strictly after `now` (ms) for a LiteLLM duration ('30s', '1d', '1mo'),
-- as tollgate-governance `duration.rs` computes it, in UTC. nil for an unreadable duration.
local function next_reset(dur, now)
  local n, unit = string.match(dur, '^(%d+)(%a+)$')
  n = tonumber(n)
  if n == nil or n < 1 then return nil end
  local day = math.floor(now / DAY)
  local day_start = day * DAY
  local period = nil
  if unit == 's' then period = n elseif unit == 'm' then period = n * 60
  elseif unit == 'h' then period = n * 3600 end
  if period ~= nil then
    local since = math.floor((now - day_start) / 1000)
    local nxt = day_start + (math.floor(since / period) + 1) * period * 1000
    return math.min(nxt, day_start + DAY)
  elseif unit == 'd' then
    return day_start + n * DAY
  elseif unit == 'w' then
    -- 1970-01-01 was a Thursday: 3 days after a Monday
    local from_monday = (day + 3) % 7
    return day_start + (7 - from_monday) * DAY + (n - 1) * 7 * DAY
  elseif unit == 'mo' then
    local y, m = civil_from_days(day)
    local months = (m - 1) + n
    return days_from_civil(y + math.floor(months / 12), months % 12 + 1, 1) * DAY
  end
  return nil
end

local FIELDS = {'spend', 'reserved', 'dur', 'reset_at', 'ws', 'wr', 'wt', 'rt', 'inf'}

local function load(key)
  local v = redis.call('HMGET', key, unpack(FIELDS))
  return {
    key = key, spend_s = v[1] or '0', spend = num(v[1]) or 0, reserved_s = v[2] or '0',
    reserved = num(v[2]) or 0, dur = v[3] or '', reset_at = num(v[4]), ws = num(v[5]),
    wr = num(v[6]) or 0, wt = num(v[7]) or 0, rt = num(v[8]) or 0, inf = num(v[9]) or 0,
  }
end

-- `seen` (optional): the keys this call already added, so a batch adds each scope once.
local function mark_dirty(dirty, key, seen)
  if seen and seen[key] then return end
  redis.call('SADD', dirty, key)
  if seen then seen[key] = true end
end

local function neg(units)
  if units == '0' then return '0' end
  if string.sub(units, 1, 1) == '-' then return string.sub(units, 2) end
  return '-' .. units
end

-- Takes a reservation of `cost` units and `tokens` tokens off a scope's counters, with its
-- parallel slot (never below 0).
local function unreserve(key, cost, tokens)
  if redis.call('HINCRBY', key, 'reserved', neg(cost)) < 0 then
    redis.call('HSET', key, 'reserved', '0')
  end
  local v = redis.call('HMGET', key, 'rt', 'inf')
  redis.call('HSET', key, 'rt', int(math.max(0, (num(v[1]) or 0) - tokens)),
    'inf', int(math.max(0, (num(v[2]) or 0) - 1)))
end

-- Releases up to 8 reservations whose lease has ended; a ticket still there becomes a tombstone
-- that lasts one more lease.
local function sweep(leases, now, lease)
  local due = redis.call('ZRANGEBYSCORE', leases, '-inf', int(now), 'LIMIT', 0, 8)
  for _, record in ipairs(due) do
    redis.call('ZREM', leases, record)
    local r = cjson.decode(record)
    for i = 4, #r do unreserve(r[i], r[2], tonumber(r[3])) end
    if redis.call('EXISTS', r[1]) == 1 then redis.call('SET', r[1], 'x', 'PX', int(lease)) end
  end
end

-- Applies the budget window `dur` ('' = none): a passed reset_at zeroes spend and moves on; a
-- window scope without a reset time gets one. The stored period becomes `dur`.
local function roll_budget(st, dur, now, dirty, seen)
  if dur == '' then
    if st.dur ~= '' then redis.call('HDEL', st.key, 'dur') end
    st.dur = ''
    return
  end
  if st.dur ~= dur then redis.call('HSET', st.key, 'dur', dur) end
  st.dur = dur
  local nxt
  if st.reset_at == nil then
    nxt = next_reset(dur, now)
  elseif st.reset_at <= now then
    nxt = next_reset(dur, now)
    st.spend, st.spend_s = 0, '0'
    redis.call('HSET', st.key, 'spend', '0', 'rst', '1')
  end
  if nxt ~= nil then
    st.reset_at = nxt
    redis.call('HSET', st.key, 'reset_at', int(nxt))
    mark_dirty(dirty, st.key, seen)
  end
end

-- The fixed rate window of `window` ms started by the first request after the last one ended.
-- Returns the window's end, ms.
local function roll_window(st, now, window)
  if st.ws ~= nil and now < st.ws + window then return st.ws + window end
  st.ws, st.wr, st.wt = now, 0, 0
  redis.call('HSET', st.key, 'ws', int(now), 'wr', '0', 'wt', '0')
  return now + window
end

-- KEYS: ticket, dirty set, leases, fleet marker, then each distinct scope.
-- ARGV: window ms, lease ms, cost units, prompt tokens, reserve tokens, check marker ('1' = refuse
--   when the fleet marker is missing), then per scope: max budget units, budget duration, rpm,
--   tpm, max parallel ('' = none).
-- Returns {1, now, n, spend 1..n (units, decimal strings, after the budget roll),
--   [position, requests left, tokens left, window end]...} (-1 = no limit; the quadruples for
-- the scopes with an RPM or TPM limit), or a denial:
--   {0, 1, position, spend, reserved, max}   budget
--   {0, 2, position, limit, window end}      requests
--   {0, 3, position, limit, used, window end} tokens
--   {0, 4, position, limit}                  parallel
--   {0, 5}                                   duplicate attempt
--   {0, 6}                                   fleet marker missing (nothing reserved)
local function reserve(keys, args)
  if args[6] == '1' and redis.call('EXISTS', keys[4]) == 0 then return {0, 6} end
  if redis.call('EXISTS', keys[1]) == 1 then return {0, 5} end
  local window, lease, cost = tonumber(args[1]), tonumber(args[2]), args[3]
  local prompt, tokens = tonumber(args[4]), tonumber(args[5])
  local now = now_ms()
  sweep(keys[3], now, lease)
  local scopes = {}
  for i = 5, #keys do
    local a = 6 + (i - 5) * 5
    local st = load(keys[i])
    st.max, st.rpm = num(args[a + 1]), num(args[a + 3])
    st.tpm, st.par = num(args[a + 4]), num(args[a + 5])
    roll_budget(st, args[a + 2], now, keys[2])
    st.wend = roll_window(st, now, window)
    scopes[#scopes + 1] = st
  end
  for p, st in ipairs(scopes) do
    if st.max ~= nil and st.spend + st.reserved >= st.max then
      return {0, 1, p - 1, st.spend_s, st.reserved_s, args[6 + (p - 1) * 5 + 1]}
    end
  end
  for p, st in ipairs(scopes) do
    if st.rpm ~= nil and st.wr >= st.rpm then return {0, 2, p - 1, st.rpm, st.wend} end
    if st.tpm ~= nil then
      local used = st.wt + st.rt
      if used >= st.tpm or used + prompt > st.tpm then
        return {0, 3, p - 1, st.tpm, used, st.wend}
      end
    end
    if st.par ~= nil and st.inf >= st.par then return {0, 4, p - 1, st.par} end
  end
  local out = {1, now, #scopes}
  for _, st in ipairs(scopes) do out[#out + 1] = st.spend_s end
  local names = {}
  for p, st in ipairs(scopes) do
    redis.call('HINCRBY', st.key, 'reserved', cost)
    redis.call('HSET', st.key, 'rt', int(st.rt + tokens), 'wr', int(st.wr + 1),
      'inf', int(st.inf + 1))
    if st.rpm ~= nil or st.tpm ~= nil then
      local left_req, left_tok = -1, -1
      if st.rpm ~= nil then left_req = math.max(0, st.rpm - st.wr - 1) end
      if st.tpm ~= nil then left_tok = math.max(0, st.tpm - st.wt - st.rt - tokens) end
      out[#out + 1], out[#out + 2], out[#out + 3], out[#out + 4] = p - 1, left_req, left_tok, st.wend
    end
    names[#names + 1] = st.key
  end
  local record = {keys[1], cost, args[5]}
  for _, name in ipairs(names) do record[#record + 1] = name end
  record = cjson.encode(record)
  redis.call('SET', keys[1], record, 'PX', int(2 * lease))
  redis.call('ZADD', keys[3], int(now + lease), record)
  return out
end

-- KEYS: ticket, dirty set, leases, then the ticket's scopes. ARGV: window ms, reserved cost
-- units, reserved tokens, actual cost units, actual tokens. Replaces the reservation by the
-- actual usage on every scope, exactly once: nil when the ticket is no longer in flight, else
-- each scope's spend after, units (decimal strings). A tombstone (the lease ended and the
-- reservation was released) is charged the actual usage only.
local function finish(keys, args, now, seen)
  local record = redis.call('GET', keys[1])
  if not record then return nil end
  redis.call('DEL', keys[1])
  if record ~= 'x' then redis.call('ZREM', keys[3], record) end
  local window, cost, tokens = tonumber(args[1]), args[2], tonumber(args[3])
  local actual_cost, actual_tokens = args[4], tonumber(args[5])
  local charged = actual_cost ~= '0' or actual_tokens ~= 0
  now = now or now_ms()
  local out = {}
  for i = 4, #keys do
    local st = load(keys[i])
    roll_budget(st, st.dur, now, keys[2], seen)
    roll_window(st, now, window)
    -- One HSET per scope: the reservation's tokens and parallel slot released (as unreserve,
    -- from the values load read: nothing in between changes them) and the actual tokens added.
    local set = {}
    if record ~= 'x' then
      if redis.call('HINCRBY', st.key, 'reserved', neg(cost)) < 0 then
        redis.call('HSET', st.key, 'reserved', '0')
      end
      set[1], set[2] = 'rt', int(math.max(0, st.rt - tokens))
      set[3], set[4] = 'inf', int(math.max(0, st.inf - 1))
    end
    local spend = st.spend_s
    if charged then
      spend = int(redis.call('HINCRBY', st.key, 'spend', actual_cost))
      redis.call('HINCRBY', st.key, 'add', actual_cost)
      set[#set + 1] = 'wt'
      set[#set + 1] = int(st.wt + actual_tokens)
      mark_dirty(keys[2], st.key, seen)
    end
    if #set > 0 then redis.call('HSET', st.key, unpack(set)) end
    out[#out + 1] = spend
  end
  return out
end

-- Adds `cost` units and `tokens` tokens of usage counted elsewhere to each scope of
-- `scope_keys` (budget and rate windows rolled first).
local function add_usage(scope_keys, dirty, window, cost, tokens, now, seen)
  now = now or now_ms()
  for _, key in ipairs(scope_keys) do
    local st = load(key)
    roll_budget(st, st.dur, now, dirty, seen)
    roll_window(st, now, window)
    if cost ~= '0' or tokens ~= 0 then
      redis.call('HINCRBY', st.key, 'spend', cost)
      redis.call('HINCRBY', st.key, 'add', cost)
      redis.call('HSET', st.key, 'wt', int(st.wt + tokens))
      mark_dirty(dirty, st.key, seen)
    end
  end
end

-- KEYS: charge key, dirty set, then the scopes. ARGV: window ms, charge key lifetime ms, cost
-- units, tokens. Adds usage counted elsewhere (a replica's local fallback) to every scope,
-- exactly once per charge key: 1 when charged, 0 when the key says it already was.
local function charge(keys, args, now, seen)
  if not redis.call('SET', keys[1], '1', 'NX', 'PX', args[2]) then return 0 end
  add_usage({unpack(keys, 3)}, keys[2], tonumber(args[1]), args[3], tonumber(args[4]), now, seen)
  return 1
end

-- The message of an error raised by redis.call (a table in Redis 7) or by Lua itself.
local function message(e)
  if type(e) == 'table' then return tostring(e.err or e.message or 'error') end
  return tostring(e)
end

-- KEYS: dirty set, leases, fleet marker, then per operation its ticket (settle, release) or
-- charge key and its scopes. ARGV: window ms, charge key lifetime ms, the fleet generation
-- (the marker's value) when the operations marked 'S' were sent, then per operation six
-- values: kind ('s' settle, 'S' settle sent before, 'r' release, 'c' charge), number of
-- scopes, reserved (charge: actual) cost units, reserved (charge: actual) tokens, actual cost
-- units, actual tokens. A settlement never sent before whose ticket Redis does not hold lost
-- it with Redis's data (a restart without persistence, a failover before replication): its
-- actual usage is charged all the same. One sent before ('S') may have been applied by the
-- send whose reply was lost, and changes nothing then, unless the generation changed since
-- (Redis lost its data in between, that application with it).
-- Returns the generation, then one value per operation: 1 applied, 0 nothing to do (already
-- settled, released or charged), or the string 'ERR <message>' when that operation failed
-- (its effects before the failure stay; the other operations run regardless). Returns -1,
-- running nothing, when the fleet marker is missing: a charge must not create a scope the
-- reseed would then skip.
local function batch(keys, args)
  local dirty, leases = keys[1], keys[2]
  local gen = redis.call('GET', keys[3])
  if not gen then return -1 end
  local same = args[3] == gen
  local window, ttl = args[1], args[2]
  -- One clock reading and one dirty-set addition per scope for the whole batch: it runs
  -- atomically, so its operations happen at one instant and a second SADD adds nothing.
  local now, seen = now_ms(), {}
  local out = {gen}
  local k, a = 4, 4
  while a + 5 <= #args do
    local kind, n = args[a], tonumber(args[a + 1])
    if kind == 'S' and not same then kind = 's' end
    local op_keys = {keys[k]}
    if kind == 'c' then
      op_keys[2] = dirty
      for i = 1, n do op_keys[2 + i] = keys[k + i] end
    else
      op_keys[2], op_keys[3] = dirty, leases
      for i = 1, n do op_keys[3 + i] = keys[k + i] end
    end
    local ok, r
    if kind == 's' or kind == 'S' then
      ok, r = pcall(finish, op_keys, {window, args[a + 2], args[a + 3], args[a + 4], args[a + 5]},
        now, seen)
      if ok and r == nil and kind == 's' then
        ok, r = pcall(add_usage, {unpack(op_keys, 4)}, dirty, tonumber(window), args[a + 4],
          tonumber(args[a + 5]), now, seen)
        r = 1
      end
    elseif kind == 'r' then
      ok, r = pcall(finish, op_keys, {window, args[a + 2], args[a + 3], '0', '0'}, now, seen)
    elseif kind == 'c' then
      ok, r = pcall(charge, op_keys, {window, ttl, args[a + 2], args[a + 3]}, now, seen)
    else
      ok, r = false, 'unknown operation ' .. tostring(kind)
    end
    if not ok then
      out[#out + 1] = 'ERR ' .. message(r)
    elseif r == nil or r == 0 then
      out[#out + 1] = 0
    else
      out[#out + 1] = 1
    end
    k, a = k + 1 + n, a + 6
  end
  return out
end

redis.register_function('tollgate_v2_reserve', function(keys, args) return reserve(keys, args) end)
redis.register_function('tollgate_v2_settle', function(keys, args)
  local out = finish(keys, args)
  if out == nil then return false end
  return out
end)
redis.register_function('tollgate_v2_release', function(keys, args)
  if finish(keys, {args[1], args[2], args[3], '0', '0'}) == nil then return 0 end
  return 1
end)

redis.register_function('tollgate_v2_batch', function(keys, args) return batch(keys, args) end)

-- KEYS: scopes. ARGV: per scope spend units, next reset ms ('' = none), duration ('' = none).
-- Writes each scope only when its hash does not exist (another replica, or live traffic, may
-- already have counted on it: the shared store is the live truth). Not marked dirty: the
-- values came from the database. Returns how many scopes were written.
redis.register_function('tollgate_v2_seed_absent', function(keys, args)
  local written = 0
  for i = 1, #keys do
    if redis.call('EXISTS', keys[i]) == 0 then
      local a = (i - 1) * 3
      redis.call('HSET', keys[i], 'spend', args[a + 1])
      if args[a + 2] ~= '' then redis.call('HSET', keys[i], 'reset_at', args[a + 2]) end
      if args[a + 3] ~= '' then redis.call('HSET', keys[i], 'dur', args[a + 3]) end
      written = written + 1
    end
  end
  return written
end)

-- KEYS: scope, dirty set. ARGV: spend units, next reset ms ('' = keep), duration ('' = keep).
redis.register_function('tollgate_v2_set_spend', function(keys, args)
  redis.call('HSET', keys[1], 'spend', args[1])
  if args[2] ~= '' then redis.call('HSET', keys[1], 'reset_at', args[2]) end
  if args[3] ~= '' then redis.call('HSET', keys[1], 'dur', args[3]) end
  mark_dirty(keys[2], keys[1])
  return 1
end)

-- KEYS: scope, dirty set. ARGV: duration ('' = the stored one). Spend 0 now; the next reset is
-- computed from the duration on the server's clock. Returns the next reset, ms (-1 = none).
redis.register_function('tollgate_v2_reset_spend', function(keys, args)
  local dur = args[1]
  if dur == '' then dur = redis.call('HGET', keys[1], 'dur') or '' end
  redis.call('HSET', keys[1], 'spend', '0', 'rst', '1')
  mark_dirty(keys[2], keys[1])
  local nxt = nil
  if dur ~= '' then nxt = next_reset(dur, now_ms()) end
  if nxt == nil then
    redis.call('HDEL', keys[1], 'reset_at')
    return -1
  end
  redis.call('HSET', keys[1], 'dur', dur, 'reset_at', int(nxt))
  return nxt
end)

-- KEYS: scope, dirty set. ARGV: duration, reset at ms, restart (1 = spend to 0).
redis.register_function('tollgate_v2_set_window', function(keys, args)
  if args[3] == '1' then redis.call('HSET', keys[1], 'spend', '0', 'rst', '1') end
  redis.call('HSET', keys[1], 'dur', args[1], 'reset_at', args[2])
  mark_dirty(keys[2], keys[1])
  return 1
end)

-- KEYS: dirty set (the scope keys it lists share its hash tag, hence its slot). Returns
-- {scope key, spend, added, reset at ('' = none), reset since last drain (0/1)}... and clears
-- the added / reset marks.
redis.register_function('tollgate_v2_drain', function(keys, args)
  local members = redis.call('SMEMBERS', keys[1])
  redis.call('DEL', keys[1])
  local out = {}
  for _, key in ipairs(members) do
    local v = redis.call('HMGET', key, 'spend', 'add', 'reset_at', 'rst')
    if v[1] or v[2] or v[3] then
      out[#out + 1] = key
      out[#out + 1] = v[1] or '0'
      out[#out + 1] = v[2] or '0'
      out[#out + 1] = v[3] or ''
      out[#out + 1] = v[4] or '0'
      redis.call('HDEL', key, 'add', 'rst')
    end
  end
  return out
end)

-- No keys. ARGV: duration, instant ms. The reset `next_reset` computes (-1 = unreadable): lets
-- the client check the server's calendar arithmetic against its own.
redis.register_function{
  function_name = 'tollgate_v2_next_reset',
  callback = function(keys, args)
    return next_reset(args[1], tonumber(args[2])) or -1
  end,
  flags = {'no-writes'},
}
