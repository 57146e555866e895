-- GCRA, as nginx's limit_req with nodelay: takes n calls at once or none.
-- KEYS[1] the key's theoretical arrival time (ms, a string)
-- ARGV[1] now (ms), ARGV[2] interval (ms per call), ARGV[3] tolerance
-- (burst x interval), ARGV[4] n
-- Returns {1, 0} taken, or {0, ms until they would fit}.
local now, t, tau, n = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])
local tat = tonumber(redis.call('GET', KEYS[1]) or '0') or 0
if tat < now then tat = now end
local new = tat + n * t
if new - now > tau + t then return {0, math.ceil(new - now - tau - t)} end
redis.call('SET', KEYS[1], string.format('%.3f', new), 'PX', math.ceil(new - now) + 1000)
return {1, 0}
