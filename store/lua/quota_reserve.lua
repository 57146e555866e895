-- Reserves a sandbox's share of its org's quota when it fits; drops the
-- reservations past their deadline on the way. A reservation's value is
-- "deadline cpuMilli memoryMb made" (ms, ms).
-- KEYS[1] the org's quota (hash: sandboxes, cpuMilli, memoryMb), KEYS[2]
-- the org's reservations (hash: id -> value)
-- ARGV[1] now (ms), ARGV[2] the sandbox id, ARGV[3] cpuMilli,
-- ARGV[4] memoryMb, ARGV[5] deadline (ms)
-- Returns {0} reserved, or {1, what, in use, limit} with what one of
-- 'sandboxes', 'cpuMilli', 'memoryMb'. The id's own reservation is not
-- counted (a second run answers the same).
local q = {}
local raw = redis.call('HGETALL', KEYS[1])
for i = 1, #raw, 2 do q[raw[i]] = tonumber(raw[i + 1]) end
local now = tonumber(ARGV[1])
local n, cpu, mem = 0, 0, 0
local r = redis.call('HGETALL', KEYS[2])
for i = 1, #r, 2 do
	local d, c, m = string.match(r[i + 1], '(%d+) (%d+) (%d+)')
	if r[i] ~= ARGV[2] then
		if d == nil or tonumber(d) < now then redis.call('HDEL', KEYS[2], r[i])
		else n = n + 1 cpu = cpu + tonumber(c) mem = mem + tonumber(m) end
	end
end
local c, m = tonumber(ARGV[3]), tonumber(ARGV[4])
if q.sandboxes and q.sandboxes > 0 and n + 1 > q.sandboxes then
	return {1, 'sandboxes', n, q.sandboxes}
end
if q.cpuMilli and q.cpuMilli > 0 and cpu + c > q.cpuMilli then
	return {1, 'cpuMilli', cpu, q.cpuMilli}
end
if q.memoryMb and q.memoryMb > 0 and mem + m > q.memoryMb then
	return {1, 'memoryMb', mem, q.memoryMb}
end
redis.call('HSET', KEYS[2], ARGV[2], ARGV[5] .. ' ' .. ARGV[3] .. ' ' .. ARGV[4] .. ' ' .. ARGV[1])
return {0}
