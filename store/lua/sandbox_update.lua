-- Sets fields of a sandbox's record when its status is the expected one.
-- KEYS[1] the record (hash)
-- ARGV[1] the expected status ('' = any), ARGV[2] ttl (s; 0 = keep),
-- ARGV[3..] field, value, ...
-- Returns -1 no record, 0 the status differed (nothing set), 1 applied.
if redis.call('EXISTS', KEYS[1]) == 0 then return -1 end
if ARGV[1] ~= '' and redis.call('HGET', KEYS[1], 'status') ~= ARGV[1] then return 0 end
if #ARGV > 2 then redis.call('HSET', KEYS[1], unpack(ARGV, 3)) end
if tonumber(ARGV[2]) > 0 then redis.call('EXPIRE', KEYS[1], ARGV[2]) end
return 1
