-- wrk script: POST /v1/jobs with a unique job_id per request (thread id +
-- counter), a 1-GPU P3 job of team "bench". Used by bench/serve_bench.sh.
local threads = {}

function setup(thread)
  table.insert(threads, thread)
  thread:set("tid", #threads)
end

function init(args)
  prefix = (args[1] or "w") .. "-" .. tostring(tid) .. "-"
  counter = 0
end

function request()
  counter = counter + 1
  local body = string.format(
    '{"job_id":"%s%d","team":"bench","priority":3,"gpus":1,"duration_s":3600}',
    prefix, counter)
  return wrk.format("POST", "/v1/jobs", {["Content-Type"] = "application/json"}, body)
end
