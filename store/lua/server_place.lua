-- Picks the server with the fewest live reservations (then the least CPU,
-- then the least memory) and reserves a sandbox there; drops the
-- reservations past their deadline on the way. A reservation's value is
-- "deadline cpuMilli memoryMb" (ms).
-- KEYS the candidates' reservations (hashes: id -> value)
-- ARGV[1] now (ms), ARGV[2] the sandbox id, ARGV[3] cpuMilli,
-- ARGV[4] memoryMb, ARGV[5] deadline (ms)
-- Returns the index (1-based) of the chosen one in KEYS.
local now = tonumber(ARGV[1])
local best, bn, bc, bm = 0, 0, 0, 0
for k = 1, #KEYS do
	local n, cpu, mem = 0, 0, 0
	local r = redis.call('HGETALL', KEYS[k])
	for i = 1, #r, 2 do
		local d, c, m = string.match(r[i + 1], '(%d+) (%d+) (%d+)')
		if d == nil or tonumber(d) < now then redis.call('HDEL', KEYS[k], r[i])
		else n = n + 1 cpu = cpu + tonumber(c) mem = mem + tonumber(m) end
	end
	if best == 0 or n < bn or (n == bn and (cpu < bc or (cpu == bc and mem < bm))) then
		best, bn, bc, bm = k, n, cpu, mem
	end
end
redis.call('HSET', KEYS[best], ARGV[2], ARGV[5] .. ' ' .. ARGV[3] .. ' ' .. ARGV[4])
return best
