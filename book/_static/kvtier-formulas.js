// The calculator's arithmetic: every formula it uses, each a copy of one function of the kvtier package.
//
// The package is the reference. Each function below names the Python function it mirrors
// (kvtier/formulas/*.py, kvtier/scenario.py, kvtier/deployment.py, kvtier/commands/compare.py), takes
// and returns SI base units (bytes, s, FLOP, FLOP/s, B/s) and does the same operations in the same
// order, so that JavaScript's doubles give Python's doubles. tests/pipeline/test_calculator.py sets
// random inputs in a browser and holds every output to the package to a relative 1e-9: a formula
// changed in the package and not here fails that test.
//
// Layout: section 1 mirrors kvtier/formulas (pure functions); section 2 mirrors kvtier.scenario.Scenario
// (`KvtierScenario`: an input set resolved into the report's numbers); section 3 mirrors
// kvtier.deployment.Deployment (the tier ladder) and kvtier.commands.compare.regen_point. A new term of
// the regeneration model goes in section 1 as one function and is called from Scenario.regenTimeS.
"use strict";

const KvtierFormulas = (() => {
  // ---- 1. kvtier/formulas ------------------------------------------------------------------------

  // kvtier.formulas.costs.block_bytes: kv_bytes_per_token x block_tokens (B)
  const blockBytes = (kvBytesPerToken, blockTokens) => kvBytesPerToken * blockTokens;

  // kvtier.formulas.costs.fetch_time_s: transfers x latency + bytes / bandwidth (s)
  const fetchTimeS = (nBytes, bandwidth, latencyS = 0, transfers = 1) => transfers * latencyS + nBytes / bandwidth;

  // kvtier.formulas.transfer.fetch_time_s: max(floor, transfers x (latency + overhead) + bytes / (bandwidth x
  // efficiency)) (s); with floor 0, efficiency 1 and overhead 0 the chapter's fetch exactly
  const transferFetchTimeS = (nBytes, bandwidth, latencyS = 0, transfers = 1, minS = 0, efficiency = 1, overheadS = 0) =>
    Math.max(minS, transfers * (latencyS + overheadS) + nBytes / (bandwidth * efficiency));

  // kvtier.formulas.transfer.link_efficiency: the pageable share if pageable, times the duplex share if duplex
  const linkEfficiency = (pageable, pageableEfficiency, duplex, duplexEfficiency) =>
    (pageable ? pageableEfficiency : 1.0) * (duplex ? duplexEfficiency : 1.0);

  // kvtier.formulas.transfer.break_even_bandwidth: n_bytes / ((regen - transfers x (latency + overhead)) x
  // efficiency), Infinity where the latency or the floor alone reach the regeneration (B/s)
  const transferBreakEvenBandwidth = (nBytes, regenS, latencyS = 0, transfers = 1, minS = 0, efficiency = 1,
    overheadS = 0) =>
    regenS > minS ? bandwidthForRatio(nBytes, regenS, 1.0, transfers * (latencyS + overheadS)) / efficiency : Infinity;

  // kvtier.formulas.transfer.break_even_latency: max((regen - bytes / (bandwidth x efficiency)) / transfers -
  // overhead, 0), 0 where the regeneration does not exceed the floor (s)
  const transferBreakEvenLatency = (nBytes, bandwidth, regenS, transfers = 1, minS = 0, efficiency = 1,
    overheadS = 0) =>
    regenS > minS ? Math.max(latencyForRatio(nBytes, bandwidth * efficiency, regenS, transfers) - overheadS, 0.0) : 0.0;

  // kvtier.formulas.costs.forward_flops: k x N x tokens (FLOP)
  const forwardFlops = (tokens, params, flopsPerParamToken = 2) => flopsPerParamToken * params * tokens;

  // kvtier.formulas.costs.attention_flops: fpp x (T x p + T (T + 1) / 2) (FLOP)
  const attentionFlops = (tokens, firstPosition, flopsPerPosition) =>
    flopsPerPosition * (tokens * firstPosition + (tokens * (tokens + 1.0)) / 2.0);

  // kvtier.formulas.costs.compute_time_s: flops / (peak x mfu) (s)
  const computeTimeS = (flops, peak, mfu) => flops / (peak * mfu);

  // kvtier.formulas.cache.regen.RegenCosts.engine_curve (numpy.interp): a tabulated curve at x, linear between its
  // points (xs increasing), its ends held beyond them (the calculator refuses a block past the last point)
  const engineCurve = (xs, ys, x) => {
    if (x <= xs[0]) return ys[0];
    const last = xs.length - 1;
    if (x >= xs[last]) return ys[last];
    let lo = 0;
    let hi = last;
    while (hi - lo > 1) {
      const mid = (lo + hi) >> 1;
      if (xs[mid] <= x) lo = mid; else hi = mid;
    }
    return ys[lo] + (ys[hi] - ys[lo]) * (x - xs[lo]) / (xs[hi] - xs[lo]);
  };

  // kvtier.pipeline.calculator.engine_kernels: a block's curves from the kernels' (`k`): alone its operations and
  // its attention, inside a batch its share of a step, the build's block at its exact times where the curves reach it
  const blockCurves = (k) => {
    const tokens = [...k.tokens];
    const lone = k.linear.map((x, j) => x + k.attention[j]);
    const batch = [...k.batch];
    const b = k.block;
    if (b) {
      const at = tokens.findIndex((n) => n >= b.tokens);
      if (tokens[at] !== b.tokens) {
        tokens.splice(at, 0, b.tokens);
        lone.splice(at, 0, 0.0);
        batch.splice(at, 0, 0.0);
      }
      lone[at] = b.lone;
      batch[at] = b.batch;
    }
    return {tokens, lone, batch};
  };

  // kvtier.formulas.costs.ratio: regen / fetch (dimensionless)
  const ratio = (regenS, fetchS) => regenS / fetchS;

  // kvtier.formulas.costs.recompute_span, upstream "resident": the block's own tokens from its position
  const recomputeSpanResident = (position, blockTokens) => [position + 0.0 * blockTokens, blockTokens + 0.0 * position];

  // kvtier.formulas.costs.regen_flops (upstream resident): parameter FLOPs plus attention over the span (FLOP)
  const regenFlops = (position, blockTokens, params, flopsPerPosition, flopsPerParamToken = 2) => {
    const [first, n] = recomputeSpanResident(position, blockTokens);
    return forwardFlops(n, params, flopsPerParamToken) + attentionFlops(n, first, flopsPerPosition);
  };

  // kvtier.formulas.costs.bandwidth_for_ratio: n_bytes / (regen / target - latency), Infinity where no bandwidth
  // reaches the target (B/s)
  const bandwidthForRatio = (nBytes, regenS, targetRatio = 1.0, latencyS = 0.0) => {
    const budget = regenS / targetRatio - latencyS;
    return budget > 0 ? nBytes / budget : Infinity;
  };

  // kvtier.formulas.costs.latency_for_ratio: max(regen / target - bytes / bandwidth, 0) / transfers (s)
  const latencyForRatio = (nBytes, bandwidth, regenS, transfers = 1, targetRatio = 1.0) => {
    const budget = regenS / targetRatio - nBytes / bandwidth;
    return Math.max(budget, 0.0) / transfers;
  };

  // kvtier.formulas.capacity.weight_bytes: params x bytes per parameter (B)
  const weightBytes = (params, bytesPerParam) => params * bytesPerParam;

  // kvtier.formulas.capacity.kv_bytes: context x KV bytes per token (B)
  const kvBytes = (contextTokens, kvBytesPerToken) => contextTokens * kvBytesPerToken;

  // kvtier.formulas.roofline.regen_bytes_read: W x T / batch + kv x positions (B)
  const regenBytesRead = (weightB, blockTokens, batchTokens, kvBytesPerToken, contextPositions) =>
    (weightB * blockTokens) / batchTokens + kvBytesPerToken * contextPositions;

  // kvtier.formulas.roofline.memory_time_s: bytes / (bandwidth x efficiency) (s)
  const memoryTimeS = (bytesRead, memBandwidth, memEfficiency = 1.0) => bytesRead / (memBandwidth * memEfficiency);

  // kvtier.formulas.roofline.roofline_time_s: max(compute side, memory side) (s)
  const rooflineTimeS = (flops, bytesRead, peak, mfu, memBandwidth, memEfficiency = 1.0) =>
    Math.max(computeTimeS(flops, peak, mfu), memoryTimeS(bytesRead, memBandwidth, memEfficiency));

  // kvtier.formulas.roofline.blended_time_s: (c^p + f^p)^(1/p), a smooth maximum; p = Infinity: the plain maximum (s)
  const blendedTimeS = (computeS, floorS, sharpness) => {
    const top = Math.max(computeS, floorS);
    if (sharpness === Infinity) return top; // numpy: top x (1 or 2) ** (1 / inf) = top
    const scaled = top > 0 ? (computeS / top) ** sharpness + (floorS / top) ** sharpness : 0;
    return top * scaled ** (1.0 / sharpness);
  };

  // kvtier.formulas.roofline.attention_time_s: layers x fixed + kv bytes / (bandwidth x efficiency); 0 with no KV (s)
  const attentionTimeS = (kvBytesRead, layers, fixedPerLayerS, memBandwidth, attentionEfficiency) =>
    kvBytesRead > 0 ? layers * fixedPerLayerS + memoryTimeS(kvBytesRead, memBandwidth, attentionEfficiency) : 0.0;

  // kvtier.formulas.roofline.forward_pass_time_s: blended(compute, max(memory + overhead, launch floor)) + serial;
  // with every term at its default (0, 0, Infinity, 0) it is roofline_time_s exactly (s)
  const forwardPassTimeS = (flops, bytesRead, peak, mfu, memBandwidth, memEfficiency, {
    layers = 0, memOverheadPerLayerS = 0, launchFloorPerLayerS = 0, sharpness = Infinity, share = 1, serialS = 0,
  } = {}) => {
    const compute = computeTimeS(flops, peak, mfu);
    const perLayer = share * layers;
    const memory = memoryTimeS(bytesRead, memBandwidth, memEfficiency) + perLayer * memOverheadPerLayerS;
    const floor = Math.max(memory, perLayer * launchFloorPerLayerS);
    return blendedTimeS(compute, floor, sharpness) + serialS;
  };

  // kvtier.formulas.roofline.bound: "memory" where the memory side exceeds the compute side, else "compute"
  const bound = (flops, bytesRead, peak, mfu, memBandwidth, memEfficiency = 1.0) =>
    memoryTimeS(bytesRead, memBandwidth, memEfficiency) > computeTimeS(flops, peak, mfu) ? "memory" : "compute";

  // kvtier.formulas.roofline.break_even_bandwidth: bandwidth_for_ratio at a ratio of 1 (B/s; Infinity: none)
  const breakEvenBandwidth = (nBytes, regenS, latencyS = 0.0) => bandwidthForRatio(nBytes, regenS, 1.0, latencyS);

  // kvtier.formulas.parallel.group_size: max(tp, ep)
  const groupSize = (tp, ep) => Math.max(tp, ep);

  // kvtier.formulas.parallel.accelerators: pp x max(tp, ep)
  const accelerators = (tp, pp, ep) => pp * groupSize(tp, ep);

  // kvtier.formulas.parallel.kv_heads_per_rank: max(1, kv_heads // tp) (vLLM's rule)
  const kvHeadsPerRank = (kvHeads, tp) => Math.max(1, Math.floor(kvHeads / tp));

  // kvtier.formulas.parallel.stage_layers: ceil(layers / pp)
  const stageLayers = (layers, pp) => Math.ceil(layers / pp);

  // kvtier.formulas.parallel.kv_shard_share: (heads per rank / heads) x (stage layers / layers); MLA's latent whole
  const kvShardShare = (kvHeads, layers, tp, pp, latent) => {
    const heads = latent ? 1.0 : kvHeadsPerRank(kvHeads, tp) / kvHeads;
    return heads * (stageLayers(layers, pp) / layers);
  };

  // kvtier.formulas.parallel.link_bytes: shard x accelerators sharing the link (B)
  const linkBytes = (shardBytes, gpusPerLink) => shardBytes * gpusPerLink;

  // kvtier.formulas.parallel.distinct_experts: E (1 - (1 - k / E)^t) under uniform routing; 0 for a dense model
  const distinctExperts = (nExperts, perToken, tokens) =>
    nExperts > 0 ? nExperts * (1.0 - (1.0 - perToken / nExperts) ** tokens) : 0.0;

  // kvtier.formulas.parallel.rank_weight_bytes: (dense / tp + routed / group) / pp (B)
  const rankWeightBytes = (denseB, routedB, tp, group, pp = 1) => (denseB / tp + routedB / group) / pp;

  // kvtier.formulas.parallel.compute_share: (dense / tp + routed / group) / (dense + routed); 1 on one accelerator
  const computeShare = (dense, routed, tp, group) =>
    tp === 1 && group === 1 ? 1.0 : (dense / tp + routed / group) / (dense + routed);

  // kvtier.formulas.parallel.allreduce_time_s: latency + 2 (n - 1) / n x bytes / bandwidth; 0 for one rank
  const allreduceTimeS = (messageBytes, ranks, latencyS, bandwidth) => {
    const wire = ((2.0 * (ranks - 1.0)) / ranks) * messageBytes;
    return ranks > 1 ? latencyS + wire / bandwidth : 0.0;
  };

  // kvtier.formulas.parallel.all_to_all_time_s: latency + (n - 1) / n x bytes / bandwidth; 0 for one rank
  const allToAllTimeS = (messageBytes, ranks, latencyS, bandwidth) => {
    const wire = ((ranks - 1.0) / ranks) * messageBytes;
    return ranks > 1 ? latencyS + wire / bandwidth : 0.0;
  };

  // kvtier.formulas.parallel.collectives_time_s: TP all-reduces, EP all-to-alls and PP hand-offs of a pass (s)
  const collectivesTimeS = (
    tokens, hidden, activationBytes, layers, moeLayers, expertsPerToken, tp, ep, pp,
    nvlinkLatencyS, nvlinkBandwidth, ibLatencyS, ibBandwidth, latencyShare = 1.0,
  ) => {
    const message = tokens * hidden * activationBytes;
    const nvLat = nvlinkLatencyS * latencyShare;
    const tpS = 2.0 * layers * allreduceTimeS(message, tp, nvLat, nvlinkBandwidth);
    const epS = 2.0 * moeLayers * allToAllTimeS(message * expertsPerToken, ep, nvLat, nvlinkBandwidth);
    const hops = pp - 1.0;
    const ppS = hops * (ibLatencyS * latencyShare + message / ibBandwidth);
    return tpS + epS + (hops > 0 ? ppS : 0.0);
  };

  // kvtier.formulas.parallel.fits: rank bytes <= capacity
  const fits = (rankBytes, capacityBytes) => rankBytes <= capacityBytes;

  // kvtier.inputs.engines.Engine.transfers_per_block: copies one block's fetch takes under an engine's layout
  // (one-unless-mla: one cross-layer copy, or one per layer under MLA)
  const engineTransfers = (mode, nLayers, layerChunks, mla = layerChunks === nLayers) =>
    mode === "one-unless-mla" ? (mla ? nLayers : 1) : ({one: 1, "per-layer": nLayers, "per-layer-kv": layerChunks})[mode];

  // ---- 2. kvtier.scenario.Scenario ---------------------------------------------------------------

  // The inputs (SI base units; counts as numbers), named after the assumption keys they stand for:
  //   model (a record of window.KVTIER_PRESETS.models), kvDtypeBytes, weightDtypeBytes, paramCount (null: the
  //   config's), blockTokens, flopsPerParamToken, peak, mfu, memBandwidth, memEfficiency, bandwidth, latency,
  //   layout ("contiguous" | "per-layer"), engine (a record of .engines or null), tp, pp, ep, gpusPerLink,
  //   activationBytes, nvlinkBandwidth, nvlinkLatency, ibBandwidth, ibLatency, hbmCapacity (null: not
  //   checked), contextLong (context.long, at most the model's window: Scenario.long_sequence_tokens); the forward-pass model's terms memOverheadPerLayer, launchFloorPerLayer (s),
  //   kneeSharpness (0: the plain maximum), attention ("streamed" | "serial"), attentionFixedPerLayer (s),
  //   attentionEfficiency (their regen.* keys; a set without them has the plain roofline: 0, 0, 0, "streamed").
  class Scenario {
    constructor(inputs) {
      this.i = inputs;
      this.m = inputs.model;
    }

    // Scenario.kv_bytes_per_token (ModelSpec.kv_bytes_per_token): KV elements per token x dtype bytes (B)
    get kvBytesPerToken() { return this.m.kv_elements_per_token * this.i.kvDtypeBytes; }

    // Scenario.params: the param_count key, else the config's exact count
    get params() { return this.i.paramCount !== null ? this.i.paramCount : this.m.total_params; }

    // Scenario.active_params: params x the config's active / total
    get activeParams() { return (this.params * this.m.active_params) / this.m.total_params; }

    // Scenario.weight_bytes
    get weightBytes() { return weightBytes(this.params, this.i.weightDtypeBytes); }

    // Scenario.placement: tp, pp, ep, gpus_per_link and the placement's accelerators
    get placement() {
      const {tp, pp, ep, gpusPerLink} = this.i;
      return {tp, pp, ep, gpusPerLink, group: groupSize(tp, ep), accelerators: accelerators(tp, pp, ep)};
    }

    // Scenario.shard_share
    get shardShare() {
      const p = this.placement;
      return kvShardShare(this.m.kv_heads, this.m.layers, p.tp, p.pp, this.m.mla);
    }

    // Scenario.block_bytes, Scenario.shard_bytes, Scenario.fetch_bytes (B)
    get blockBytes() { return blockBytes(this.kvBytesPerToken, this.i.blockTokens); }
    get shardBytes() { return this.blockBytes * this.shardShare; }
    get fetchBytes() { return linkBytes(this.shardBytes, this.placement.gpusPerLink); }

    // Scenario.weight_split: (dense, routed) weight bytes
    weightSplit() {
      const routed = this.m.routed_params;
      if (!routed) return [this.weightBytes, 0.0];
      const routedBytes = (this.weightBytes * routed) / this.m.total_params;
      return [this.weightBytes - routedBytes, routedBytes];
    }

    // Scenario.touched_weight_bytes: the busiest rank's weight read in a pass over passTokens tokens (B)
    touchedWeightBytes(passTokens) {
      let [dense, routed] = this.weightSplit();
      const p = this.placement;
      if (routed) {
        const touched = distinctExperts(this.m.routed_experts, this.m.experts_per_token, passTokens);
        routed = (routed * touched) / this.m.routed_experts;
      }
      return rankWeightBytes(dense, routed, p.tp, p.group);
    }

    // Scenario.compute_share
    get computeShare() {
      const p = this.placement;
      const routedActive = this.m.routed_active_params;
      return computeShare(this.m.active_params - routedActive, routedActive, p.tp, p.group);
    }

    // Scenario.collectives_s
    collectivesS(tokens, latencyShare = 1.0) {
      const p = this.placement;
      const i = this.i;
      return collectivesTimeS(
        tokens, this.m.hidden_size, i.activationBytes, this.m.layers, this.m.moe_layers, this.m.experts_per_token,
        p.tp, p.ep, p.pp, i.nvlinkLatency, i.nvlinkBandwidth, i.ibLatency, i.ibBandwidth, latencyShare,
      );
    }

    // Scenario.rank_memory_bytes at context.long: the busiest stage's weights and its share of one sequence (B)
    rankMemoryBytes() {
      const p = this.placement;
      const [dense, routed] = this.weightSplit();
      const weights = rankWeightBytes(dense, routed, p.tp, p.group, p.pp);
      return weights + kvBytes(this.i.contextLong, this.kvBytesPerToken) * this.shardShare;
    }

    // Scenario.check_fit: true when parallel.hbm_capacity is null or holds rank_memory_bytes
    fitsMemory() { return this.i.hbmCapacity === null || fits(this.rankMemoryBytes(), this.i.hbmCapacity); }

    // Scenario.with_placement: this scenario with some of tp, pp, ep, gpusPerLink replaced
    withPlacement(counts) { return new Scenario({...this.i, ...counts}); }

    // Scenario.min_accelerators(capacity): the fewest accelerators whose placement holds the weights and one
    // sequence at context.long, as [count, tp, pp]: tp in 1, 2, 4, 8 (ep = tp for an MoE model), pp in powers
    // of two up to the layers, the fewest first and the smallest pp among equals; [0, 0, 0] when none fits
    minAccelerators(capacityBytes) {
      const moe = this.m.routed_experts > 0;
      const options = [];
      for (let pp = 1; pp <= Math.min(this.m.layers, 1024); pp *= 2) {
        for (const tp of [1, 2, 4, 8]) if (!(moe && tp > this.m.routed_experts)) options.push([tp * pp, pp, tp]);
      }
      options.sort((a, b) => a[0] - b[0] || a[1] - b[1] || a[2] - b[2]);
      for (const [n, pp, tp] of options) {
        if (fits(this.withPlacement({tp, pp, ep: moe ? tp : 1}).rankMemoryBytes(), capacityBytes)) return [n, tp, pp];
      }
      return [0, 0, 0];
    }

    // Scenario.layer_chunks: per layer of the largest stage, K and V apart (one latent under MLA)
    get layerChunks() { return stageLayers(this.m.layers, this.placement.pp) * (this.m.mla ? 1 : 2); }

    // Scenario.transfers(layout)
    transfers(layout) { return layout === "contiguous" ? 1 : this.layerChunks; }

    // Scenario.fetch_transfers: the engine's layout, else fetch_layout's
    get fetchTransfers() {
      const e = this.i.engine;
      if (e) return engineTransfers(e.transfers, stageLayers(this.m.layers, this.placement.pp), this.layerChunks, this.m.mla);
      return this.transfers(this.i.layout);
    }

    // Scenario.copy_method: fetch.copy_method, or under "engine" the engine's (none without one)
    get copyMethod() {
      const method = this.i.copyMethod || "none";
      if (method !== "engine") return method;
      return this.i.engine ? this.i.engine.copy_method : "none";
    }

    // Scenario.transfer_latency_s: the copy method's per-copy cost replaces fetch_latency where one applies (s)
    get transferLatency() {
      const method = this.copyMethod;
      return method === "none" ? this.i.latency : this.i.copyCosts[method];
    }

    // Scenario.block_latency_s: per-transfer latency x transfers (s)

    // Scenario.link_efficiency: the share of the link's pinned, one-way rate a fetch reaches
    get linkEfficiency() {
      const i = this.i;
      return linkEfficiency(i.hostMemory === "pageable", i.pageableEfficiency, i.contention === "duplex", i.duplexEfficiency);
    }

    // Scenario.link_overhead_s: fetch.pageable_overhead per transfer from pageable host memory, else 0 (s)
    get linkOverheadS() { return this.i.hostMemory === "pageable" ? this.i.pageableOverhead : 0.0; }

    // Scenario.link_fetch_s: the transfer model over a link (s)
    linkFetchS(nBytes, bandwidth, latencyS, transfers) {
      return transferFetchTimeS(nBytes, bandwidth, latencyS, transfers, this.i.minTransfer, this.linkEfficiency, this.linkOverheadS);
    }

    // Scenario.fetch_s at the typed bandwidth (s)
    get fetchS() { return this.linkFetchS(this.fetchBytes, this.i.bandwidth, this.transferLatency, this.fetchTransfers); }

    // Scenario.interior_flops(position, "resident") (FLOP)
    interiorFlops(position) {
      return regenFlops(position, this.i.blockTokens, this.activeParams, this.m.attention_flops_per_position,
        this.i.flopsPerParamToken);
    }

    // Scenario.in_batch_compute_s: flops over every accelerator plus the collectives' bytes, latency shared (s)
    inBatchComputeS(flops) {
      const p = this.placement;
      const comm = this.collectivesS(this.i.blockTokens, 0.0) / p.pp;
      return computeTimeS(flops, this.i.peak * p.accelerators, this.i.mfu) + comm;
    }

    // Scenario.kv_rank_bytes_per_token: one rank's KV heads over all the layers (B)
    get kvRankBytesPerToken() {
      return this.kvBytesPerToken * kvShardShare(this.m.kv_heads, this.m.layers, this.placement.tp, 1, this.m.mla);
    }

    // Scenario.regen_bytes(position, "resident", batch_tokens, with_kv) (B)
    regenBytes(position, batchTokens, withKv = true) {
      const [first, n] = recomputeSpanResident(position, this.i.blockTokens);
      const passTokens = Math.max(batchTokens, n);
      const kvRank = withKv ? this.kvRankBytesPerToken : 0.0;
      return regenBytesRead(this.touchedWeightBytes(passTokens), n, passTokens, kvRank, first);
    }

    // Scenario.knee_sharpness: regen.knee_sharpness, 0 the plain maximum
    get kneeSharpness() { return this.i.kneeSharpness === 0 ? Infinity : this.i.kneeSharpness; }

    // Scenario.attention_s: one rank's serial attention over the cached positions (s)
    attentionS(contextPositions) {
      return attentionTimeS(this.kvRankBytesPerToken * contextPositions, this.m.layers, this.i.attentionFixedPerLayer,
        this.i.memBandwidth, this.i.attentionEfficiency);
    }

    // Scenario._pass_collectives_s (s)
    passCollectivesS(position, batchTokens) {
      if (this.placement.accelerators === 1) return 0.0;
      const [, n] = recomputeSpanResident(position, this.i.blockTokens);
      return this.collectivesS(n, n / Math.max(batchTokens, n));
    }

    // Scenario.regen_time_s(position, "resident", mfu, model=...) (s)
    regenTimeS(position, model, batchTokens) {
      const flops = this.interiorFlops(position);
      if (model === "mfu") return this.inBatchComputeS(flops);
      const serial = this.i.attention === "serial";
      const nbytes = this.regenBytes(position, batchTokens, !serial);
      const rankFlops = flops * this.computeShare;
      const [first, n] = recomputeSpanResident(position, this.i.blockTokens);
      const attention = serial ? this.attentionS(first) : 0.0;
      const time = forwardPassTimeS(rankFlops, nbytes, this.i.peak, this.i.mfu, this.i.memBandwidth, this.i.memEfficiency, {
        layers: this.m.layers,
        memOverheadPerLayerS: this.i.memOverheadPerLayer,
        launchFloorPerLayerS: this.i.launchFloorPerLayer,
        sharpness: this.kneeSharpness,
        share: n / Math.max(batchTokens, n),
        serialS: attention,
      });
      return time + this.passCollectivesS(position, batchTokens);
    }

    // Scenario.in_batch_regen_s(0, "resident", mfu): the block's marginal compute inside a batch (s); under the
    // engine model (i.engineKernels, kvtier.pipeline.calculator.engine_kernels) its share of a batched step
    get batchRegenS() {
      const k = this.i.engineKernels;
      if (!k) return this.regenTimeS(0, "mfu", this.i.blockTokens);
      const c = blockCurves(k);
      return engineCurve(c.tokens, c.batch, this.i.blockTokens);
    }

    // Scenario.lone_regen_s(0, "resident", mfu): the roofline with the block as the whole pass (s); under the
    // engine model the measured kernels' pass of the block alone
    get loneRegenS() {
      const k = this.i.engineKernels;
      if (!k) return this.regenTimeS(0, "roofline", this.i.blockTokens);
      const c = blockCurves(k);
      return engineCurve(c.tokens, c.lone, this.i.blockTokens);
    }

    // Scenario.lone_bound(0, "resident", mfu): which side of the roofline binds a lone block
    get loneBound() {
      const flops = this.interiorFlops(0) * this.computeShare;
      const nbytes = this.regenBytes(0, this.i.blockTokens);
      return bound(flops, nbytes, this.i.peak, this.i.mfu, this.i.memBandwidth, this.i.memEfficiency);
    }

    regenS(regime) { return regime === "lone" ? this.loneRegenS : this.batchRegenS; }
  }

  // ---- 3. kvtier.deployment.Deployment and kvtier.commands.compare.regen_point -------------------

  // compare.regen_point: the typed link against regeneration in `regime` (SI units)
  function point(s, regime) {
    const regen = s.regenS(regime);
    const fetch = s.fetchS;
    return {
      regen_time_s: regen,
      fetch_time_s: fetch,
      regen_to_fetch_ratio: regen / fetch,
      // compare: transfer.break_even_bandwidth(fetch_bytes, regen, latency, transfers, floor, share, overhead)
      break_even_bandwidth_bytes_per_s: transferBreakEvenBandwidth(s.fetchBytes, regen, s.transferLatency,
        s.fetchTransfers, s.i.minTransfer, s.linkEfficiency, s.linkOverheadS),
      // Deployment.break_even_latency at the typed bandwidth: transfer.break_even_latency, the tier's own share
      break_even_latency_s: transferBreakEvenLatency(s.fetchBytes, s.i.bandwidth, regen, s.fetchTransfers,
        s.i.minTransfer, s.linkEfficiency, s.linkOverheadS),
    };
  }

  // Deployment.fetch_s, .ratio, .fetch_wins, .break_even_bandwidth, .break_even_latency per tier, in `layout`
  // (the chapter's two layouts: an engine sets only the typed link's transfers, as in the package)
  function tierLadder(s, tiers, latencyOf, layout) {
    const transfers = s.transfers(layout);
    return tiers.map((t) => {
      const latency = latencyOf(t);
      const fetch = s.linkFetchS(s.fetchBytes, t.bandwidth, latency, transfers);
      const row = {name: t.name, title: t.title, bandwidth: t.bandwidth, latency, transfers, fetch_time_s: fetch};
      const [floor, share, overhead] = [s.i.minTransfer, s.linkEfficiency, s.linkOverheadS];
      for (const regime of ["batch", "lone"]) {
        const regen = s.regenS(regime);
        row[`${regime}_ratio`] = ratio(regen, fetch);
        row[`${regime}_fetch_wins`] = ratio(regen, fetch) > 1.0;
        row[`${regime}_break_even_bandwidth`] = transferBreakEvenBandwidth(s.fetchBytes, regen, latency, transfers,
          floor, share, overhead);
        row[`${regime}_break_even_latency`] = transferBreakEvenLatency(s.fetchBytes, t.bandwidth, regen, transfers,
          floor, share, overhead);
      }
      return row;
    });
  }

  // ---- 4. kvtier.analysis.lru_plan: the trace's LRU tier in each medium, recomputation inside a batch -------

  // kvtier.formulas.flash.flash_drives: the NVMe drives a tier buys for its capacity, write rate and wear
  // (counts; flashBytes B; wearoutS s: its rated writes over the write rate)
  function flashDrives(capacityB, writeBps, driveB, driveWriteBps, dwpd, periodS) {
    const ratedPerS = (dwpd * driveB) / 86400.0;
    const need = [capacityB / driveB, writeBps / driveWriteBps, writeBps / ratedPerS];
    const counts = need.map((x) => (Number.isFinite(x) ? Math.ceil(x - 1e-9) : NaN));
    const count = counts.every(Number.isFinite) ? Math.max(...counts) : NaN;
    const rated = (dwpd * capacityB * periodS) / 86400.0;
    const wearoutS = writeBps > 0 ? rated / writeBps : (writeBps === 0 ? Infinity : NaN);
    return {forCapacity: counts[0], forBandwidth: counts[1], forEndurance: counts[2], count, flashBytes: count * driveB, wearoutS};
  }

  // kvtier.analysis.lru_plan (kvtier.formulas.lru_tier.lru_tiers) for the trace of kvtier.pipeline.calculator.trace_tier
  // (`tr`), regeneration in the analytic model inside a batch (RegenCosts.in_batch_s: a prefix's FLOPs / (peak x MFU),
  // accelerator-seconds): per medium of tr.tiers, the tier's holding, fetching and the recomputation it avoids
  // (USD/s), its net saving, and the accelerators the trace's prefill keeps busy with no cache. Each request's hit
  // prefix is fetched over the tier's link in ceil(hit tokens / block) x the engine's transfers, at the tier's
  // latency as the book sets it (latencyOf). null under measured kernels: the trace's prompts are priced from
  // their sums, which only the analytic model can use.
  function traceTiers(s, tr, tiers, latencyOf) {
    if (s.i.engineKernels) return null;
    const fpp = s.i.flopsPerParamToken;
    const perPosition = s.m.attention_flops_per_position;
    const inBatchS = (flops) => computeTimeS(flops, s.i.peak, s.i.mfu);
    const perS = tr.duration_s > 0 ? 1.0 / tr.duration_s : NaN;
    const h = tr.hits;
    let avoidedS = 0.0;
    for (let j = 0; j < h.tokens.length; j++) {
      avoidedS += inBatchS(regenFlops(0, h.tokens[j], s.activeParams, perPosition, fpp)) * h.requests[j];
    }
    const prefillS = inBatchS(forwardFlops(tr.prompt_tokens, s.activeParams, fpp) + perPosition * tr.prompt_attention);
    const capacity = tr.capacity_blocks * tr.block_tokens * s.kvBytesPerToken;
    const write = tr.written_tokens * s.kvBytesPerToken * perS;
    const linkBytesPerToken = (s.kvBytesPerToken * s.fetchBytes) / s.blockBytes;
    const accel = tr.accelerator_usd_per_s;
    const avoided = avoidedS * perS * accel;
    const nv = tr.nvme;
    return tr.tiers.map((name) => {
      const t = tiers.find((x) => x.name === name);
      const latency = latencyOf(t);
      let linkS = 0.0;
      for (let j = 0; j < h.tokens.length; j++) {
        if (h.blocks[j] <= 0) continue; // a request with no hit fetches nothing
        const transfers = Math.ceil(h.tokens[j] / s.i.blockTokens) * s.fetchTransfers;
        linkS += s.linkFetchS(h.tokens[j] * linkBytesPerToken, t.bandwidth, latency, transfers) * h.requests[j];
      }
      const drives = t.medium === "nvme"
        ? flashDrives(capacity, write, nv.drive_bytes, nv.write_bandwidth, nv.endurance_dwpd, nv.endurance_period_s) : null;
      const held = drives && Number.isFinite(drives.flashBytes) ? drives.flashBytes : capacity;
      const hold = tr.hold_usd_per_byte_s[t.medium] * held;
      const fetch = linkS * perS * accel;
      return {
        name, title: t.title, medium: t.medium, capacity_bytes: capacity, hold_usd_per_s: hold, fetch_usd_per_s: fetch,
        recompute_avoided_usd_per_s: avoided, saved_usd_per_s: avoided - fetch - hold, write_bytes_per_s: write,
        prefill_accelerators: prefillS * perS, saved_accelerators: avoidedS * perS, drives,
      };
    });
  }

  // ---- 5. kvtier.formulas.split: a reused prefix regenerated, fetched, fetched layer by layer, or split ------

  // kvtier.formulas.ttft.overlapped_s: fetch then compute pipelined over `stages` layers (s)
  const overlappedS = (fetchS, computeS, stages) => (fetchS + computeS + (stages - 1) * Math.max(fetchS, computeS)) / stages;

  // kvtier.formulas.cache.regen.RegenCosts of a Scenario (Scenario.regen_costs at the typed MFU): a prompt's prefill
  // after a cached prefix, in either regime, analytic or under the engine model's curves (i.engineKernels)
  class Prefill {
    constructor(s) {
      this.s = s;
      this.perToken = s.collectivesS(1.0, 0.0); // RegenCosts.collective_s_per_token
      this.latency = s.collectivesS(1.0, 1.0) - this.perToken; // RegenCosts.collective_latency_s
      this.kvRankShare = s.kvRankBytesPerToken / s.kvBytesPerToken;
    }

    // RegenCosts.prefix_flops: k N h + f h (h + 1) / 2 (FLOP)
    prefixFlops(tokens) {
      const s = this.s;
      return regenFlops(0.0, tokens, s.activeParams, s.m.attention_flops_per_position, s.i.flopsPerParamToken);
    }

    // RegenCosts.pass_latency_s: a pass of its own over `tokens` new tokens attending to `cached` (s)
    passLatencyS(flops, tokens, cached) {
      const s = this.s;
      const i = s.i;
      const nbytes = regenBytesRead(s.touchedWeightBytes(tokens), tokens, tokens, s.kvBytesPerToken * this.kvRankShare, cached);
      const t = forwardPassTimeS(flops * s.computeShare, nbytes, i.peak, i.mfu, i.memBandwidth, i.memEfficiency, {
        layers: s.m.layers, memOverheadPerLayerS: i.memOverheadPerLayer, launchFloorPerLayerS: i.launchFloorPerLayer,
        sharpness: s.kneeSharpness,
      });
      return t + (s.placement.accelerators > 1 ? this.latency + tokens * this.perToken : 0.0);
    }

    // RegenCosts.in_batch_latency_s: flops over every accelerator plus the tokens' collectives over the stages (s)
    inBatchLatencyS(flops, tokens) {
      const s = this.s;
      const p = s.placement;
      return computeTimeS(flops, s.i.peak * p.accelerators, s.i.mfu) + (tokens * this.perToken) / p.pp;
    }

    // RegenCosts.rest_wall_s: the prompt's prefill after its first `hit` tokens, in `regime`; 0 where none is left (s)
    restWallS(prompt, hit, regime) {
      const rest = prompt - hit;
      if (!(rest > 0)) return 0.0;
      const k = this.s.i.engineKernels;
      if (k) {
        if (regime === "batch") return engineCurve(k.tokens, k.batch, prompt) - engineCurve(k.tokens, k.batch, hit);
        const attention = engineCurve(k.tokens, k.attention, prompt) - engineCurve(k.tokens, k.attention, hit);
        return engineCurve(k.tokens, k.linear, Math.max(rest, 1.0)) + attention;
      }
      const flops = this.prefixFlops(prompt) - this.prefixFlops(hit);
      if (regime === "batch") return this.inBatchLatencyS(flops, rest);
      return this.passLatencyS(flops, Math.max(rest, 1.0), hit);
    }

    // kvtier.formulas.split.head_s: the first `tokens` of a prompt prefilled from its start (s)
    headS(tokens, regime) { return this.restWallS(tokens, 0.0, regime); }
  }

  // kvtier.formulas.ttft.Fetch.time_s over the typed layout (kvtier.report.serving.fetch_of): a prefix of `tokens`
  // in the engine's blocks, each in the layout's copies at the copy's latency; 0 for no tokens (s)
  const prefixFetchS = (s, tokens, bandwidth) => {
    if (!(tokens > 0)) return 0.0;
    const transfers = Math.ceil(tokens / s.i.blockTokens) * s.fetchTransfers;
    return s.linkFetchS(tokens * (s.fetchBytes / s.i.blockTokens), bandwidth, s.transferLatency, transfers);
  };

  // kvtier.formulas.split.best_split for one request (kvtier.commands.compare.split_point): a prefix of `prefix`
  // tokens held behind the typed link, then `prompt - prefix` new ones; the same bisection on the engine's block
  // boundaries, the same candidates, the first of equal times (tokens; s)
  function bestSplit(s, prefix, prompt, regime, slowdown = 0.0) {
    const pf = new Prefill(s);
    const bw = s.i.bandwidth;
    const block = s.i.blockTokens;
    const rest = pf.restWallS(prompt, prefix, regime);
    const whole = pf.headS(prompt, regime);
    const at = (x) => { // _time_at: [T(s), head, tail]
      if (x >= prefix) return [whole, whole, 0.0];
      const head = pf.headS(x, regime) * (1.0 + slowdown);
      const tail = prefixFetchS(s, prefix - x, bw);
      return [Math.max(head, tail) + rest, head, tail];
    };
    const boundary = (k) => Math.min(k * block, prefix);
    let lo = 0;
    let hi = Math.ceil(prefix / block);
    while (lo < hi) { // the first k with head(s_k) >= tail(s_k)
      const mid = Math.floor((lo + hi) / 2.0);
      const x = boundary(mid);
      if (pf.headS(x, regime) * (1.0 + slowdown) >= prefixFetchS(s, prefix - x, bw)) hi = mid; else lo = mid + 1;
    }
    const candidates = [0.0, boundary(Math.max(lo - 1, 0)), boundary(lo), prefix];
    let best = 0;
    const times = candidates.map((x) => at(x)[0]);
    for (let j = 1; j < times.length; j++) if (times[j] < times[best]) best = j;
    const split = candidates[best];
    const [t, head, tail] = at(split);
    const fetched = prefixFetchS(s, prefix, bw);
    const out = {
      regenerate_s: whole, fetch_s: fetched + rest,
      layer_overlap_s: overlappedS(fetched, rest * (1.0 + slowdown), Math.max(s.m.layers, 1)),
      split_tokens: split, split_s: t, head_s: head, tail_s: tail, rest_s: split >= prefix ? 0.0 : rest,
    };
    out.better_pure = out.fetch_s < out.regenerate_s ? "fetch" : "regenerate";
    out.gain_over_better_pure = Math.min(out.regenerate_s, out.fetch_s) / t;
    out.splits = split > 0 && split < prefix;
    // Split.fastest: regenerate, the engine's fetch (layer by layer where it overlaps) or a strict split, first on a tie
    const overlap = Boolean(s.i.engine && s.i.engine.layer_overlap);
    const ways = [["regenerate", out.regenerate_s], overlap ? ["layer-by-layer fetch", out.layer_overlap_s] : ["fetch", out.fetch_s],
      ["split", out.splits ? t : Infinity]];
    out.fastest = ways.reduce((a, b) => (b[1] < a[1] ? b : a))[0];
    return out;
  }

  return {
    blockBytes, fetchTimeS, transferFetchTimeS, linkEfficiency, transferBreakEvenBandwidth, transferBreakEvenLatency,
    forwardFlops, attentionFlops, computeTimeS, ratio, regenFlops, bandwidthForRatio,
    latencyForRatio, weightBytes, kvBytes, regenBytesRead, memoryTimeS, rooflineTimeS, blendedTimeS, attentionTimeS,
    forwardPassTimeS, bound, breakEvenBandwidth, engineCurve, blockCurves,
    groupSize, accelerators, kvHeadsPerRank, stageLayers, kvShardShare, linkBytes, distinctExperts, rankWeightBytes,
    computeShare, allreduceTimeS, allToAllTimeS, collectivesTimeS, fits, engineTransfers, Scenario, point, tierLadder,
    flashDrives, traceTiers, overlappedS, Prefill, prefixFetchS, bestSplit,
  };
})();
window.KvtierFormulas = KvtierFormulas;
