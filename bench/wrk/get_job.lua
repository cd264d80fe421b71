-- wrk script: GET /v1/jobs/r-N for N drawn uniformly from 1..$1 (jobs that
-- bench/serve_bench.sh submitted beforehand).
function init(args)
  n = tonumber(args[1] or "1000")
  math.randomseed(os.time() + (tid or 0))
end

function request()
  return wrk.format("GET", "/v1/jobs/r-" .. math.random(1, n))
end
