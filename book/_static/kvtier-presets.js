// Written by `kvtier build` (kvtier/pipeline/calculator.py) from the build's assumption set:
// the calculator's starting values and presets, in SI base units. Do not edit by hand.
window.KVTIER_PRESETS = {
 "accelerators": {
  "a100-sxm": {
   "mem_bandwidth": 2039000000000.0,
   "memory": 80000000000.0,
   "peak_flops": 312000000000000.0,
   "title": "NVIDIA A100 SXM4 80GB"
  },
  "b200": {
   "mem_bandwidth": 8000000000000.0,
   "memory": 180000000000.0,
   "peak_flops": 2250000000000000.0,
   "title": "NVIDIA B200 (HGX B200, per GPU)"
  },
  "chapter-implied": {
   "mem_bandwidth": 3350000000000.0,
   "memory": null,
   "peak_flops": 500000000000000.0,
   "title": "The source chapter's unnamed accelerator"
  },
  "dgx-spark-gb10": {
   "mem_bandwidth": 273000000000.0,
   "memory": 128000000000.0,
   "peak_flops": null,
   "title": "NVIDIA DGX Spark (GB10 Grace Blackwell superchip)"
  },
  "gb200": {
   "mem_bandwidth": 8000000000000.0,
   "memory": 186000000000.0,
   "peak_flops": 2500000000000000.0,
   "title": "NVIDIA GB200 (one Blackwell GPU of a GB200 Grace Blackwell superchip)"
  },
  "h100-sxm": {
   "mem_bandwidth": 3350000000000.0,
   "memory": 80000000000.0,
   "peak_flops": 989000000000000.0,
   "title": "NVIDIA H100 SXM5 80GB"
  },
  "h200": {
   "mem_bandwidth": 4800000000000.0,
   "memory": 141000000000.0,
   "peak_flops": 989000000000000.0,
   "title": "NVIDIA H200 SXM 141GB"
  },
  "l40s": {
   "mem_bandwidth": 864000000000.0,
   "memory": 48000000000.0,
   "peak_flops": 362050000000000.0,
   "title": "NVIDIA L40S 48GB"
  }
 },
 "bandwidth_labels": [
  "optimistic",
  "mid",
  "pessimistic"
 ],
 "dtype_bytes": {
  "bf16": 2,
  "fp16": 2,
  "fp32": 4,
  "fp8": 1
 },
 "engine_presets": [
  "vllm",
  "vllm-0.11",
  "sglang",
  "sglang-layer-first",
  "tensorrt-llm",
  "lmcache",
  "lmcache-layerwise",
  "mooncake"
 ],
 "engines": {
  "lmcache": {
   "block_tokens": 256,
   "copy_method": "kernel",
   "description": "LMCache (its default, use_layerwise false) under vLLM",
   "layer_overlap": false,
   "transfers": "one"
  },
  "lmcache-layerwise": {
   "block_tokens": 256,
   "copy_method": "kernel",
   "description": "LMCache with use_layerwise true under vLLM",
   "layer_overlap": true,
   "transfers": "per-layer"
  },
  "mooncake": {
   "block_tokens": 512,
   "copy_method": "batched-dma",
   "description": "Mooncake (store and transfer engine), layer-wise KV load as in its FAST'25 design",
   "layer_overlap": true,
   "transfers": "per-layer"
  },
  "sglang": {
   "block_tokens": 64,
   "copy_method": "kernel",
   "description": "SGLang HiCache (host memory as L2) as its best-practice guide configures it: page_first host layout, --hicache-io-backend kernel",
   "layer_overlap": true,
   "transfers": "per-layer"
  },
  "sglang-layer-first": {
   "block_tokens": 64,
   "copy_method": "batched-dma",
   "description": "SGLang HiCache with its layer_first host layout and --hicache-io-backend direct",
   "layer_overlap": true,
   "transfers": "per-layer-kv"
  },
  "tensorrt-llm": {
   "block_tokens": 32,
   "copy_method": "batched-dma",
   "description": "TensorRT-LLM's KV cache manager with host offloading (secondary block pool)",
   "layer_overlap": false,
   "transfers": "one"
  },
  "vllm": {
   "block_tokens": 16,
   "copy_method": "batched-dma",
   "description": "vLLM's native CPU offloading (OffloadingConnector) as it is since 0.12: a uniform attention model's KV cache is allocated cross-layer, so a block's every layer, K and V lie in one contiguous region",
   "layer_overlap": false,
   "transfers": "one-unless-mla"
  },
  "vllm-0.11": {
   "block_tokens": 16,
   "copy_method": "batched-dma",
   "description": "vLLM's native CPU offloading (OffloadingConnector) up to 0.11, per-layer KV tensors, FlashAttention backend",
   "layer_overlap": false,
   "transfers": "per-layer-kv"
  }
 },
 "keys": {
  "bandwidth.mid": {
   "high": 1000000000000000.0,
   "integer": false,
   "kind": "bandwidth",
   "low": 1000.0,
   "optional": false,
   "seed_text": "64 GB/s",
   "seed_value": 64000000000.0,
   "text": "64 GB/s",
   "value": 64000000000.0
  },
  "bandwidth.optimistic": {
   "high": 1000000000000000.0,
   "integer": false,
   "kind": "bandwidth",
   "low": 1000.0,
   "optional": false,
   "seed_text": "121 GB/s",
   "seed_value": 121000000000.0,
   "text": "121 GB/s",
   "value": 121000000000.0
  },
  "bandwidth.pessimistic": {
   "high": 1000000000000000.0,
   "integer": false,
   "kind": "bandwidth",
   "low": 1000.0,
   "optional": false,
   "seed_text": "32 GB/s",
   "seed_value": 32000000000.0,
   "text": "32 GB/s",
   "value": 32000000000.0
  },
  "block_tokens": {
   "high": 1073741824.0,
   "integer": true,
   "kind": "tokens",
   "low": 1.0,
   "optional": false,
   "seed_text": "16 tokens",
   "seed_value": 16.0,
   "text": "16 tokens",
   "value": 16.0
  },
  "collective.ib_bandwidth": {
   "high": 1000000000000000.0,
   "integer": false,
   "kind": "bandwidth",
   "low": 1000.0,
   "optional": false,
   "seed_text": "400 Gb/s",
   "seed_value": 50000000000.0,
   "text": "400 Gb/s",
   "value": 50000000000.0
  },
  "collective.ib_bandwidth_high": {
   "high": 1000000000000000.0,
   "integer": false,
   "kind": "bandwidth",
   "low": 1000.0,
   "optional": false,
   "seed_text": "400 Gb/s",
   "seed_value": 50000000000.0,
   "text": "400 Gb/s",
   "value": 50000000000.0
  },
  "collective.ib_bandwidth_low": {
   "high": 1000000000000000.0,
   "integer": false,
   "kind": "bandwidth",
   "low": 1000.0,
   "optional": false,
   "seed_text": "40 GB/s",
   "seed_value": 40000000000.0,
   "text": "40 GB/s",
   "value": 40000000000.0
  },
  "collective.ib_latency": {
   "high": 10.0,
   "integer": false,
   "kind": "time",
   "low": 0.0,
   "optional": false,
   "seed_text": "15 us",
   "seed_value": 1.4999999999999999e-05,
   "text": "15 us",
   "value": 1.4999999999999999e-05
  },
  "collective.ib_latency_high": {
   "high": 10.0,
   "integer": false,
   "kind": "time",
   "low": 0.0,
   "optional": false,
   "seed_text": "40 us",
   "seed_value": 3.9999999999999996e-05,
   "text": "40 us",
   "value": 3.9999999999999996e-05
  },
  "collective.ib_latency_low": {
   "high": 10.0,
   "integer": false,
   "kind": "time",
   "low": 0.0,
   "optional": false,
   "seed_text": "5 us",
   "seed_value": 4.9999999999999996e-06,
   "text": "5 us",
   "value": 4.9999999999999996e-06
  },
  "collective.nvlink_bandwidth": {
   "high": 1000000000000000.0,
   "integer": false,
   "kind": "bandwidth",
   "low": 1000.0,
   "optional": false,
   "seed_text": "450 GB/s",
   "seed_value": 450000000000.0,
   "text": "450 GB/s",
   "value": 450000000000.0
  },
  "collective.nvlink_bandwidth_high": {
   "high": 1000000000000000.0,
   "integer": false,
   "kind": "bandwidth",
   "low": 1000.0,
   "optional": false,
   "seed_text": "450 GB/s",
   "seed_value": 450000000000.0,
   "text": "450 GB/s",
   "value": 450000000000.0
  },
  "collective.nvlink_bandwidth_low": {
   "high": 1000000000000000.0,
   "integer": false,
   "kind": "bandwidth",
   "low": 1000.0,
   "optional": false,
   "seed_text": "300 GB/s",
   "seed_value": 300000000000.0,
   "text": "300 GB/s",
   "value": 300000000000.0
  },
  "collective.nvlink_latency": {
   "high": 10.0,
   "integer": false,
   "kind": "time",
   "low": 0.0,
   "optional": false,
   "seed_text": "10 us",
   "seed_value": 9.999999999999999e-06,
   "text": "10 us",
   "value": 9.999999999999999e-06
  },
  "collective.nvlink_latency_high": {
   "high": 10.0,
   "integer": false,
   "kind": "time",
   "low": 0.0,
   "optional": false,
   "seed_text": "30 us",
   "seed_value": 2.9999999999999997e-05,
   "text": "30 us",
   "value": 2.9999999999999997e-05
  },
  "collective.nvlink_latency_low": {
   "high": 10.0,
   "integer": false,
   "kind": "time",
   "low": 0.0,
   "optional": false,
   "seed_text": "5 us",
   "seed_value": 4.9999999999999996e-06,
   "text": "5 us",
   "value": 4.9999999999999996e-06
  },
  "context.long": {
   "high": 1073741824.0,
   "integer": true,
   "kind": "tokens",
   "low": 1.0,
   "optional": false,
   "seed_text": "128K tokens",
   "seed_value": 131072.0,
   "text": "128K tokens",
   "value": 131072.0
  },
  "engine": {
   "choices": [
    "none",
    "vllm",
    "vllm-0.11",
    "sglang",
    "sglang-layer-first",
    "tensorrt-llm",
    "lmcache",
    "lmcache-layerwise",
    "mooncake"
   ],
   "integer": false,
   "kind": "choice",
   "optional": false,
   "seed_text": "none",
   "seed_value": "none",
   "text": "none",
   "value": "none"
  },
  "fetch.contention": {
   "choices": [
    "none",
    "duplex"
   ],
   "integer": false,
   "kind": "choice",
   "optional": false,
   "seed_text": "none",
   "seed_value": "none",
   "text": "none",
   "value": "none"
  },
  "fetch.copy_cost.batched_dma": {
   "high": 10.0,
   "integer": false,
   "kind": "time",
   "low": 0.0,
   "optional": false,
   "seed_text": "3.53 us",
   "seed_value": 3.5299999999999997e-06,
   "text": "3.53 us",
   "value": 3.5299999999999997e-06
  },
  "fetch.copy_cost.kernel": {
   "high": 10.0,
   "integer": false,
   "kind": "time",
   "low": 0.0,
   "optional": false,
   "seed_text": "0.5 us",
   "seed_value": 5e-07,
   "text": "0.5 us",
   "value": 5e-07
  },
  "fetch.copy_cost.lone_dma": {
   "high": 10.0,
   "integer": false,
   "kind": "time",
   "low": 0.0,
   "optional": false,
   "seed_text": "9.049 us",
   "seed_value": 9.049e-06,
   "text": "9.049 us",
   "value": 9.049e-06
  },
  "fetch.copy_method": {
   "choices": [
    "engine",
    "none",
    "lone-dma",
    "batched-dma",
    "kernel"
   ],
   "integer": false,
   "kind": "choice",
   "optional": false,
   "seed_text": "engine",
   "seed_value": "engine",
   "text": "engine",
   "value": "engine"
  },
  "fetch.duplex_efficiency": {
   "high": 1.0,
   "integer": false,
   "kind": "fraction",
   "low": 0.0001,
   "optional": false,
   "seed_text": "100%",
   "seed_value": 1.0,
   "text": "100%",
   "value": 1.0
  },
  "fetch.host_memory": {
   "choices": [
    "pinned",
    "pageable"
   ],
   "integer": false,
   "kind": "choice",
   "optional": false,
   "seed_text": "pinned",
   "seed_value": "pinned",
   "text": "pinned",
   "value": "pinned"
  },
  "fetch.min_transfer_time": {
   "high": 10.0,
   "integer": false,
   "kind": "time",
   "low": 0.0,
   "optional": false,
   "seed_text": "0 s",
   "seed_value": 0.0,
   "text": "0 s",
   "value": 0.0
  },
  "fetch.pageable_efficiency": {
   "high": 1.0,
   "integer": false,
   "kind": "fraction",
   "low": 0.0001,
   "optional": false,
   "seed_text": "100%",
   "seed_value": 1.0,
   "text": "100%",
   "value": 1.0
  },
  "fetch.pageable_overhead": {
   "high": 10.0,
   "integer": false,
   "kind": "time",
   "low": 0.0,
   "optional": false,
   "seed_text": "0 s",
   "seed_value": 0.0,
   "text": "0 s",
   "value": 0.0
  },
  "fetch_latency": {
   "high": 10.0,
   "integer": false,
   "kind": "time",
   "low": 0.0,
   "optional": false,
   "seed_text": "0 us",
   "seed_value": 0.0,
   "text": "0 us",
   "value": 0.0
  },
  "fetch_layout": {
   "choices": [
    "contiguous",
    "per-layer"
   ],
   "integer": false,
   "kind": "choice",
   "optional": false,
   "seed_text": "contiguous",
   "seed_value": "contiguous",
   "text": "contiguous",
   "value": "contiguous"
  },
  "flops_per_param_token": {
   "high": 1000.0,
   "integer": false,
   "kind": "count",
   "low": 0.01,
   "optional": false,
   "seed_text": "2",
   "seed_value": 2.0,
   "text": "2",
   "value": 2.0
  },
  "illustrative.bandwidth": {
   "choices": [
    "optimistic",
    "mid",
    "pessimistic"
   ],
   "integer": false,
   "kind": "choice",
   "optional": false,
   "seed_text": "mid",
   "seed_value": "mid",
   "text": "mid",
   "value": "mid"
  },
  "illustrative.mfu": {
   "choices": [
    "optimistic",
    "typical",
    "conservative"
   ],
   "integer": false,
   "kind": "choice",
   "optional": false,
   "seed_text": "conservative",
   "seed_value": "conservative",
   "text": "conservative",
   "value": "conservative"
  },
  "kv_dtype": {
   "choices": [
    "bf16",
    "fp16",
    "fp32",
    "fp8"
   ],
   "integer": false,
   "kind": "choice",
   "optional": false,
   "seed_text": "bf16",
   "seed_value": "bf16",
   "text": "bf16",
   "value": "bf16"
  },
  "mfu.conservative": {
   "high": 1.0,
   "integer": false,
   "kind": "fraction",
   "low": 0.0001,
   "optional": false,
   "seed_text": "25%",
   "seed_value": 0.25,
   "text": "25%",
   "value": 0.25
  },
  "mfu.optimistic": {
   "high": 1.0,
   "integer": false,
   "kind": "fraction",
   "low": 0.0001,
   "optional": false,
   "seed_text": "50%",
   "seed_value": 0.5,
   "text": "50%",
   "value": 0.5
  },
  "mfu.typical": {
   "high": 1.0,
   "integer": false,
   "kind": "fraction",
   "low": 0.0001,
   "optional": false,
   "seed_text": "40%",
   "seed_value": 0.4,
   "text": "40%",
   "value": 0.4
  },
  "model": {
   "choices": [],
   "integer": false,
   "kind": "text",
   "optional": false,
   "seed_text": "llama-3-70b",
   "seed_value": "llama-3-70b",
   "text": "llama-3-70b",
   "value": "llama-3-70b"
  },
  "parallel.activation_dtype": {
   "choices": [
    "bf16",
    "fp16",
    "fp32",
    "fp8"
   ],
   "integer": false,
   "kind": "choice",
   "optional": false,
   "seed_text": "bf16",
   "seed_value": "bf16",
   "text": "bf16",
   "value": "bf16"
  },
  "parallel.ep": {
   "high": 1024.0,
   "integer": true,
   "kind": "count",
   "low": 1.0,
   "optional": false,
   "seed_text": "1",
   "seed_value": 1.0,
   "text": "1",
   "value": 1.0
  },
  "parallel.gpus_per_link": {
   "high": 64.0,
   "integer": true,
   "kind": "count",
   "low": 1.0,
   "optional": false,
   "seed_text": "1",
   "seed_value": 1.0,
   "text": "1",
   "value": 1.0
  },
  "parallel.hbm_capacity": {
   "high": 1.152921504606847e+18,
   "integer": false,
   "kind": "bytes",
   "low": 1000000000.0,
   "optional": true,
   "seed_text": null,
   "seed_value": null,
   "text": null,
   "value": null
  },
  "parallel.pp": {
   "high": 1024.0,
   "integer": true,
   "kind": "count",
   "low": 1.0,
   "optional": false,
   "seed_text": "1",
   "seed_value": 1.0,
   "text": "1",
   "value": 1.0
  },
  "parallel.tp": {
   "high": 1024.0,
   "integer": true,
   "kind": "count",
   "low": 1.0,
   "optional": false,
   "seed_text": "1",
   "seed_value": 1.0,
   "text": "1",
   "value": 1.0
  },
  "param_count": {
   "high": 1000000000000000.0,
   "integer": false,
   "kind": "count",
   "low": 1.0,
   "optional": true,
   "seed_text": "70e9",
   "seed_value": 70000000000.0,
   "text": "70e9",
   "value": 70000000000.0
  },
  "peak_flops": {
   "high": 1e+21,
   "integer": false,
   "kind": "flop_rate",
   "low": 1000000000.0,
   "optional": false,
   "seed_text": "500 TFLOP/s",
   "seed_value": 500000000000000.0,
   "text": "500 TFLOP/s",
   "value": 500000000000000.0
  },
  "regen.attention": {
   "choices": [
    "streamed",
    "serial"
   ],
   "integer": false,
   "kind": "choice",
   "optional": false,
   "seed_text": "streamed",
   "seed_value": "streamed",
   "text": "streamed",
   "value": "streamed"
  },
  "regen.attention_efficiency": {
   "high": 1.0,
   "integer": false,
   "kind": "fraction",
   "low": 0.0001,
   "optional": false,
   "seed_text": "80%",
   "seed_value": 0.8,
   "text": "80%",
   "value": 0.8
  },
  "regen.attention_fixed_per_layer": {
   "high": 10.0,
   "integer": false,
   "kind": "time",
   "low": 0.0,
   "optional": false,
   "seed_text": "0 s",
   "seed_value": 0.0,
   "text": "0 s",
   "value": 0.0
  },
  "regen.knee_sharpness": {
   "high": 1000000000000000.0,
   "integer": false,
   "kind": "count",
   "low": 0.0,
   "optional": false,
   "seed_text": "0",
   "seed_value": 0.0,
   "text": "0",
   "value": 0.0
  },
  "regen.launch_floor_per_layer": {
   "high": 10.0,
   "integer": false,
   "kind": "time",
   "low": 0.0,
   "optional": false,
   "seed_text": "0 s",
   "seed_value": 0.0,
   "text": "0 s",
   "value": 0.0
  },
  "regen.mem_bandwidth": {
   "high": 1000000000000000.0,
   "integer": false,
   "kind": "bandwidth",
   "low": 1000.0,
   "optional": false,
   "seed_text": "3.35 TB/s",
   "seed_value": 3350000000000.0,
   "text": "3.35 TB/s",
   "value": 3350000000000.0
  },
  "regen.mem_efficiency": {
   "high": 1.0,
   "integer": false,
   "kind": "fraction",
   "low": 0.0001,
   "optional": false,
   "seed_text": "80%",
   "seed_value": 0.8,
   "text": "80%",
   "value": 0.8
  },
  "regen.mem_overhead_per_layer": {
   "high": 10.0,
   "integer": false,
   "kind": "time",
   "low": 0.0,
   "optional": false,
   "seed_text": "0 s",
   "seed_value": 0.0,
   "text": "0 s",
   "value": 0.0
  },
  "tier_latency.hbm": {
   "high": 10.0,
   "integer": false,
   "kind": "time",
   "low": 0.0,
   "optional": false,
   "seed_text": "0 us",
   "seed_value": 0.0,
   "text": "0 us",
   "value": 0.0
  },
  "tier_latency.host_link": {
   "high": 10.0,
   "integer": false,
   "kind": "time",
   "low": 0.0,
   "optional": false,
   "seed_text": "9.049 us",
   "seed_value": 9.049e-06,
   "text": "9.049 us",
   "value": 9.049e-06
  },
  "tier_latency.nvlink_c2c": {
   "high": 10.0,
   "integer": false,
   "kind": "time",
   "low": 0.0,
   "optional": false,
   "seed_text": "0.5 us",
   "seed_value": 5e-07,
   "text": "0.5 us",
   "value": 5e-07
  },
  "tier_latency.nvme": {
   "high": 10.0,
   "integer": false,
   "kind": "time",
   "low": 0.0,
   "optional": false,
   "seed_text": "92 us",
   "seed_value": 9.2e-05,
   "text": "92 us",
   "value": 9.2e-05
  },
  "tier_latency.rdma": {
   "high": 10.0,
   "integer": false,
   "kind": "time",
   "low": 0.0,
   "optional": false,
   "seed_text": "3 us",
   "seed_value": 3e-06,
   "text": "3 us",
   "value": 3e-06
  },
  "uncertainty.bandwidth_high": {
   "high": 1000000000000000.0,
   "integer": false,
   "kind": "bandwidth",
   "low": 1000.0,
   "optional": false,
   "seed_text": "121 GB/s",
   "seed_value": 121000000000.0,
   "text": "121 GB/s",
   "value": 121000000000.0
  },
  "uncertainty.bandwidth_low": {
   "high": 1000000000000000.0,
   "integer": false,
   "kind": "bandwidth",
   "low": 1000.0,
   "optional": false,
   "seed_text": "32 GB/s",
   "seed_value": 32000000000.0,
   "text": "32 GB/s",
   "value": 32000000000.0
  },
  "uncertainty.mem_bandwidth_high": {
   "high": 1000000000000000.0,
   "integer": false,
   "kind": "bandwidth",
   "low": 1000.0,
   "optional": false,
   "seed_text": "4.8 TB/s",
   "seed_value": 4800000000000.0,
   "text": "4.8 TB/s",
   "value": 4800000000000.0
  },
  "uncertainty.mem_bandwidth_low": {
   "high": 1000000000000000.0,
   "integer": false,
   "kind": "bandwidth",
   "low": 1000.0,
   "optional": false,
   "seed_text": "3.35 TB/s",
   "seed_value": 3350000000000.0,
   "text": "3.35 TB/s",
   "value": 3350000000000.0
  },
  "uncertainty.mem_efficiency_high": {
   "high": 1.0,
   "integer": false,
   "kind": "fraction",
   "low": 0.0001,
   "optional": false,
   "seed_text": "90%",
   "seed_value": 0.9,
   "text": "90%",
   "value": 0.9
  },
  "uncertainty.mem_efficiency_low": {
   "high": 1.0,
   "integer": false,
   "kind": "fraction",
   "low": 0.0001,
   "optional": false,
   "seed_text": "60%",
   "seed_value": 0.6,
   "text": "60%",
   "value": 0.6
  },
  "uncertainty.mfu_high": {
   "high": 1.0,
   "integer": false,
   "kind": "fraction",
   "low": 0.0001,
   "optional": false,
   "seed_text": "50%",
   "seed_value": 0.5,
   "text": "50%",
   "value": 0.5
  },
  "uncertainty.mfu_low": {
   "high": 1.0,
   "integer": false,
   "kind": "fraction",
   "low": 0.0001,
   "optional": false,
   "seed_text": "25%",
   "seed_value": 0.25,
   "text": "25%",
   "value": 0.25
  },
  "uncertainty.peak_high": {
   "high": 1e+21,
   "integer": false,
   "kind": "flop_rate",
   "low": 1000000000.0,
   "optional": false,
   "seed_text": "989 TFLOP/s",
   "seed_value": 989000000000000.0,
   "text": "989 TFLOP/s",
   "value": 989000000000000.0
  },
  "uncertainty.peak_low": {
   "high": 1e+21,
   "integer": false,
   "kind": "flop_rate",
   "low": 1000000000.0,
   "optional": false,
   "seed_text": "500 TFLOP/s",
   "seed_value": 500000000000000.0,
   "text": "500 TFLOP/s",
   "value": 500000000000000.0
  },
  "weight_dtype": {
   "choices": [
    "auto",
    "bf16",
    "fp16",
    "fp32",
    "fp8",
    "int8",
    "int4"
   ],
   "integer": false,
   "kind": "choice",
   "optional": false,
   "seed_text": "bf16",
   "seed_value": "bf16",
   "text": "bf16",
   "value": "bf16"
  }
 },
 "mfu_labels": [
  "optimistic",
  "typical",
  "conservative"
 ],
 "model_presets": [
  "llama-2-7b",
  "llama-3-8b",
  "llama-3-70b",
  "llama-3.1-70b",
  "llama-3.1-405b",
  "mistral-7b",
  "mixtral-8x7b",
  "qwen2.5-72b",
  "deepseek-v3"
 ],
 "models": {
  "deepseek-v3": {
   "active_params": 37552297472,
   "attention": "MLA",
   "attention_flops_per_position": 4997120,
   "experts_per_token": 8,
   "heads": 128,
   "hidden_size": 7168,
   "kv_elements_per_token": 35136,
   "kv_heads": 128,
   "layers": 61,
   "max_positions": 163840,
   "mla": true,
   "moe_layers": 58,
   "name": "deepseek-v3",
   "routed_active_params": 20434649088,
   "routed_experts": 256,
   "routed_params": 653908770816,
   "total_params": 671026419200,
   "weight_dtype": "fp8"
  },
  "llama-2-7b": {
   "active_params": 6738415616,
   "attention": "MHA",
   "attention_flops_per_position": 524288,
   "experts_per_token": 0,
   "heads": 32,
   "hidden_size": 4096,
   "kv_elements_per_token": 262144,
   "kv_heads": 32,
   "layers": 32,
   "max_positions": 4096,
   "mla": false,
   "moe_layers": 0,
   "name": "llama-2-7b",
   "routed_active_params": 0,
   "routed_experts": 0,
   "routed_params": 0,
   "total_params": 6738415616,
   "weight_dtype": "fp16"
  },
  "llama-3-70b": {
   "active_params": 70553706496,
   "attention": "GQA",
   "attention_flops_per_position": 2621440,
   "experts_per_token": 0,
   "heads": 64,
   "hidden_size": 8192,
   "kv_elements_per_token": 163840,
   "kv_heads": 8,
   "layers": 80,
   "max_positions": 8192,
   "mla": false,
   "moe_layers": 0,
   "name": "llama-3-70b",
   "routed_active_params": 0,
   "routed_experts": 0,
   "routed_params": 0,
   "total_params": 70553706496,
   "weight_dtype": "bf16"
  },
  "llama-3-8b": {
   "active_params": 8030261248,
   "attention": "GQA",
   "attention_flops_per_position": 524288,
   "experts_per_token": 0,
   "heads": 32,
   "hidden_size": 4096,
   "kv_elements_per_token": 65536,
   "kv_heads": 8,
   "layers": 32,
   "max_positions": 8192,
   "mla": false,
   "moe_layers": 0,
   "name": "llama-3-8b",
   "routed_active_params": 0,
   "routed_experts": 0,
   "routed_params": 0,
   "total_params": 8030261248,
   "weight_dtype": "bf16"
  },
  "llama-3.1-405b": {
   "active_params": 405853388800,
   "attention": "GQA",
   "attention_flops_per_position": 8257536,
   "experts_per_token": 0,
   "heads": 128,
   "hidden_size": 16384,
   "kv_elements_per_token": 258048,
   "kv_heads": 8,
   "layers": 126,
   "max_positions": 131072,
   "mla": false,
   "moe_layers": 0,
   "name": "llama-3.1-405b",
   "routed_active_params": 0,
   "routed_experts": 0,
   "routed_params": 0,
   "total_params": 405853388800,
   "weight_dtype": "bf16"
  },
  "llama-3.1-70b": {
   "active_params": 70553706496,
   "attention": "GQA",
   "attention_flops_per_position": 2621440,
   "experts_per_token": 0,
   "heads": 64,
   "hidden_size": 8192,
   "kv_elements_per_token": 163840,
   "kv_heads": 8,
   "layers": 80,
   "max_positions": 131072,
   "mla": false,
   "moe_layers": 0,
   "name": "llama-3.1-70b",
   "routed_active_params": 0,
   "routed_experts": 0,
   "routed_params": 0,
   "total_params": 70553706496,
   "weight_dtype": "bf16"
  },
  "mistral-7b": {
   "active_params": 7241732096,
   "attention": "GQA",
   "attention_flops_per_position": 524288,
   "experts_per_token": 0,
   "heads": 32,
   "hidden_size": 4096,
   "kv_elements_per_token": 65536,
   "kv_heads": 8,
   "layers": 32,
   "max_positions": 32768,
   "mla": false,
   "moe_layers": 0,
   "name": "mistral-7b",
   "routed_active_params": 0,
   "routed_experts": 0,
   "routed_params": 0,
   "total_params": 7241732096,
   "weight_dtype": "bf16"
  },
  "mixtral-8x7b": {
   "active_params": 12879925248,
   "attention": "GQA",
   "attention_flops_per_position": 524288,
   "experts_per_token": 2,
   "heads": 32,
   "hidden_size": 4096,
   "kv_elements_per_token": 65536,
   "kv_heads": 8,
   "layers": 32,
   "max_positions": 32768,
   "mla": false,
   "moe_layers": 32,
   "name": "mixtral-8x7b",
   "routed_active_params": 11274289152,
   "routed_experts": 8,
   "routed_params": 45097156608,
   "total_params": 46702792704,
   "weight_dtype": "bf16"
  },
  "qwen2.5-72b": {
   "active_params": 72706203648,
   "attention": "GQA",
   "attention_flops_per_position": 2621440,
   "experts_per_token": 0,
   "heads": 64,
   "hidden_size": 8192,
   "kv_elements_per_token": 163840,
   "kv_heads": 8,
   "layers": 80,
   "max_positions": 131072,
   "mla": false,
   "moe_layers": 0,
   "name": "qwen2.5-72b",
   "routed_active_params": 0,
   "routed_experts": 0,
   "routed_params": 0,
   "total_params": 72706203648,
   "weight_dtype": "bf16"
  }
 },
 "set_name": "seed",
 "tiers": [
  {
   "bandwidth": 450000000000.0,
   "latency_key": "tier_latency.nvlink_c2c",
   "medium": "dram",
   "name": "nvlink-c2c",
   "title": "NVLink-C2C (Grace Hopper), GPU reading Grace LPDDR5x"
  },
  {
   "bandwidth": 63000000000.0,
   "latency_key": "tier_latency.host_link",
   "medium": "dram",
   "name": "pcie5-x16",
   "title": "PCIe 5.0 x16 to host DRAM"
  },
  {
   "bandwidth": 121000000000.0,
   "latency_key": "tier_latency.host_link",
   "medium": "dram",
   "name": "pcie6-x16",
   "title": "PCIe 6.0 x16 to host DRAM"
  },
  {
   "bandwidth": 31500000000.0,
   "latency_key": "tier_latency.host_link",
   "medium": "cxl",
   "name": "cxl2-x8",
   "title": "CXL 2.0 x8 memory expander (PCIe 5.0 physical layer)"
  },
  {
   "bandwidth": 63000000000.0,
   "latency_key": "tier_latency.host_link",
   "medium": "cxl",
   "name": "cxl2-x16",
   "title": "CXL 2.0 x16 memory expander (PCIe 5.0 physical layer)"
  },
  {
   "bandwidth": 60500000000.0,
   "latency_key": "tier_latency.host_link",
   "medium": "cxl",
   "name": "cxl3-x8",
   "title": "CXL 3.x x8 memory expander (PCIe 6.0 physical layer)"
  },
  {
   "bandwidth": 121000000000.0,
   "latency_key": "tier_latency.host_link",
   "medium": "cxl",
   "name": "cxl3-x16",
   "title": "CXL 3.x x16 memory expander (PCIe 6.0 physical layer)"
  },
  {
   "bandwidth": 50000000000.0,
   "latency_key": "tier_latency.rdma",
   "medium": "dram",
   "name": "rdma-400g",
   "title": "400 Gb/s RDMA NIC (InfiniBand NDR or 400GbE RoCE) to a remote host's DRAM"
  },
  {
   "bandwidth": 7000000000.0,
   "latency_key": "tier_latency.nvme",
   "medium": "nvme",
   "name": "nvme-gen4-x4",
   "title": "NVMe SSD, PCIe 4.0 x4"
  },
  {
   "bandwidth": 14000000000.0,
   "latency_key": "tier_latency.nvme",
   "medium": "nvme",
   "name": "nvme-gen5-x4",
   "title": "NVMe SSD, PCIe 5.0 x4"
  }
 ],
 "uncertain_points": {
  "bandwidth": [
   "bandwidth.optimistic",
   "bandwidth.mid",
   "bandwidth.pessimistic"
  ],
  "mem_bandwidth": [
   "regen.mem_bandwidth"
  ],
  "mem_efficiency": [
   "regen.mem_efficiency"
  ],
  "mfu": [
   "mfu.optimistic",
   "mfu.typical",
   "mfu.conservative"
  ],
  "peak": [
   "peak_flops"
  ]
 },
 "weight_dtype_bytes": {
  "bf16": 2,
  "fp16": 2,
  "fp32": 4,
  "fp8": 1,
  "int4": 0.5,
  "int8": 1
 }
};
