#!lua name=tollgate_route_v1

-- Routing state shared by the replicas of a fleet (see routing.rs). One call per sync:
--
-- KEYS[1]  this minute's usage hash: field 'r' .. id = requests, 't' .. id = tokens
-- KEYS[2]  in-flight hash: field = replica id, value = "id\tcount\n" per deployment busy
-- KEYS[3]  replicas sorted set: member = replica id, score = last sync, server ms
-- KEYS[4]  cooldowns sorted set: member = deployment id, score = deadline, publisher's Unix ms
-- ARGV[1]  the calling replica's id
-- ARGV[2]  usage hash expiry, ms
-- ARGV[3]  replica expiry, ms: a replica that has not synced for that long counts nothing in
--          flight (it died or lost Redis)
-- ARGV[4]  the caller's Unix ms (cooldowns still running are those ending after it)
-- ARGV[5]  the caller's in-flight counts, packed as KEYS[2]'s values ('' = none)
-- ARGV[6..] triples: deployment id, requests delta, tokens delta
--
-- Returns { usage hash as a flat list, { id, others' in flight, ... }, { id, deadline, ... } }.
local function sync(keys, args)
  local use, busy, seen, cool = keys[1], keys[2], keys[3], keys[4]
  local me = args[1]
  local t = redis.call('TIME')
  local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
  local replica_ttl = tonumber(args[3])
  local i = 6
  while i + 2 <= #args do
    local id, dr, dt = args[i], tonumber(args[i + 1]), tonumber(args[i + 2])
    if dr ~= 0 then redis.call('HINCRBY', use, 'r' .. id, dr) end
    if dt ~= 0 then redis.call('HINCRBY', use, 't' .. id, dt) end
    i = i + 3
  end
  if i > 6 then redis.call('PEXPIRE', use, args[2]) end

  redis.call('ZADD', seen, now, me)
  if args[5] == '' then
    redis.call('HDEL', busy, me)
  else
    redis.call('HSET', busy, me, args[5])
  end
  local stale = redis.call('ZRANGEBYSCORE', seen, '-inf', now - replica_ttl)
  for _, r in ipairs(stale) do
    redis.call('HDEL', busy, r)
    redis.call('ZREM', seen, r)
  end
  -- Keys of a fleet that is gone go too.
  redis.call('PEXPIRE', busy, replica_ttl * 4)
  redis.call('PEXPIRE', seen, replica_ttl * 4)

  local others = {}
  local all = redis.call('HGETALL', busy)
  for j = 1, #all, 2 do
    if all[j] ~= me then
      for id, c in string.gmatch(all[j + 1], '([^\t\n]+)\t(%d+)\n') do
        others[id] = (others[id] or 0) + tonumber(c)
      end
    end
  end
  local flat = {}
  for id, c in pairs(others) do
    flat[#flat + 1] = id
    flat[#flat + 1] = tostring(c)
  end

  redis.call('ZREMRANGEBYSCORE', cool, '-inf', tonumber(args[4]) - 3600000)
  local running = redis.call('ZRANGEBYSCORE', cool, '(' .. args[4], '+inf', 'WITHSCORES')
  return { redis.call('HGETALL', use), flat, running }
end

-- A cooldown started: KEYS[1] the cooldowns set, ARGV[1] deployment id, ARGV[2] deadline
-- (Unix ms); the later deadline wins.
local function cooldown(keys, args)
  redis.call('ZADD', keys[1], 'GT', args[2], args[1])
  redis.call('PEXPIRE', keys[1], 3600000)
  return 1
end

redis.register_function('tollgate_route_v1_sync', sync)
redis.register_function('tollgate_route_v1_cooldown', cooldown)
