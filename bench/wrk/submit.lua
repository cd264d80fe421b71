-- wrk script: POST /v1/jobs with a unique job_id per request (thread id +
-- counter) and the body api_bench sends (an 8-GPU job with a command and an
-- environment). Used by bench/serve_bench.sh.
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
    '{"job_id":"%s%d","team":"bench","priority":2,"gpus":8,"gang_gpus":8,"duration_s":%d,' ..
    '"ckpt_interval_s":1800,"ckpt_s":60,"restore_s":120,"command":"torchrun --nproc_per_node=8 ' ..
    'train.py --config configs/llama-8b.yaml --resume latest","env":{"WANDB_PROJECT":"llm-pretrain",' ..
    '"NCCL_DEBUG":"WARN","DATA_DIR":"/datasets/fineweb/shard-%d","CKPT_DIR":"/ckpt/%s%d","SEED":"%d"}}',
    prefix, counter, 600 + (counter * 7919) % 6600, counter % 512, prefix, counter, counter)
  return wrk.format("POST", "/v1/jobs", {["Content-Type"] = "application/json"}, body)
end
