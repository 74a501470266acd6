// The calculator: fetch or regenerate, for the values a reader types. It fills every
// <div id="kvtier-calculator"> (or class "kvtier-calculator") of a page. Offline: it reads its starting values
// and presets from window.KVTIER_PRESETS (_static/kvtier-presets.js, written by `kvtier build` from the
// build's own assumption set) and its arithmetic from window.KvtierFormulas (_static/kvtier-formulas.js,
// each formula naming the package function it mirrors). Nothing is fetched.
"use strict";

(() => {
  const F = () => window.KvtierFormulas;
  const P = () => window.KVTIER_PRESETS;

  // ---- numbers as a reader reads them (never NaN or Infinity) -------------------------------------------
  const sig = (x, digits = 3) => {
    if (!Number.isFinite(x)) return "—";
    if (x === 0) return "0";
    const a = Math.abs(x);
    if (a >= 1e6 || a < 1e-3) return x.toPrecision(digits).replace("e+", "e");
    const text = Number(x.toPrecision(digits)).toString();
    const [whole, frac] = text.split(".");
    return whole.replace(/\B(?=(\d{3})+(?!\d))/g, ",") + (frac ? "." + frac : "");
  };
  const fmtTime = (s) => {
    const a = Math.abs(s);
    if (a === 0) return "0 s";
    if (a < 1e-6) return `${sig(s * 1e9)} ns`;
    if (a < 1e-3) return `${sig(s * 1e6)} µs`;
    if (a < 1) return `${sig(s * 1e3)} ms`;
    return `${sig(s)} s`;
  };
  const fmtBytes = (b) => {
    const units = [["GiB", 2 ** 30], ["MiB", 2 ** 20], ["KiB", 2 ** 10]];
    for (const [u, f] of units) if (Math.abs(b) >= f) return `${sig(b / f)} ${u}`;
    return `${sig(b)} B`;
  };
  const fmtBandwidth = (bps) => {
    const a = Math.abs(bps);
    if (a >= 1e12) return `${sig(bps / 1e12)} TB/s`;
    if (a >= 1e9) return `${sig(bps / 1e9)} GB/s`;
    if (a >= 1e6) return `${sig(bps / 1e6)} MB/s`;
    return `${sig(bps / 1e3)} kB/s`;
  };
  const fmtGB = (b) => `${(b / 1e9).toLocaleString("en-US", {minimumFractionDigits: 1, maximumFractionDigits: 1})} GB`; // check_fit's
  const fmtCount = (n) => (n >= 1e9 ? `${sig(n / 1e9)} billion` : n >= 1e6 ? `${sig(n / 1e6)} million` : sig(n, 4));
  const fmtGain = (r) => `${r.toFixed(2)}×`; // a split's gain: at least 1, its hundredths the point
  const fmtRatio = (r) => (r >= 100 ? `${Math.round(r).toLocaleString("en-US")}×` : `${sig(r)}×`);

  // ---- the fields ----------------------------------------------------------------------------------------
  // Each typed field: the assumption key it stands for (a bracket key names the illustrative one), its unit
  // shown to the reader, the factor to SI (multiply; "%": divide by 100, as kvtier.units.parse_quantity), and
  // the unit the command writes.
  const illus = (kind) => P().keys[`illustrative.${kind}`].value;
  const NUMBER_FIELDS = {
    param_count: {key: () => "param_count", label: "Parameters (e.g. 70e9; empty: the model's own count)", unit: "", toSi: (x) => x, cmd: "", nullable: true},
    block_tokens: {key: () => "block_tokens", label: "Block size (tokens)", unit: "tokens", toSi: (x) => x, cmd: ""},
    bandwidth: {key: () => `bandwidth.${illus("bandwidth")}`, label: "Link bandwidth (GB/s, one direction)", toSi: (x) => x * 1e9, fromSi: (v) => v / 1e9, cmd: "GB/s"},
    latency: {key: () => "fetch_latency", label: "Latency per transfer (µs)", toSi: (x) => x * 1e-6, fromSi: (v) => v / 1e-6, cmd: "us"},
    peak: {key: () => "peak_flops", label: "Dense peak (TFLOP/s)", toSi: (x) => x * 1e12, fromSi: (v) => v / 1e12, cmd: "TFLOP/s"},
    mfu: {key: () => `mfu.${illus("mfu")}`, label: "Model FLOPs utilization (%)", toSi: (x) => x / 100, fromSi: (v) => v * 100, cmd: "%"},
    mem_bandwidth: {key: () => "regen.mem_bandwidth", label: "Memory bandwidth (GB/s)", toSi: (x) => x * 1e9, fromSi: (v) => v / 1e9, cmd: "GB/s"},
    mem_efficiency: {key: () => "regen.mem_efficiency", label: "Memory efficiency (%)", toSi: (x) => x / 100, fromSi: (v) => v * 100, cmd: "%"},
    // what the placement must fit in (Scenario.check_fit); empty: null, not checked
    hbm_capacity: {key: () => "parallel.hbm_capacity", label: "Memory per accelerator (GB; empty: not checked)", toSi: (x) => x * 1e9, fromSi: (v) => v / 1e9, cmd: "GB", nullable: true},
    tp: {key: () => "parallel.tp", label: "Tensor-parallel size (accelerators)", toSi: (x) => x, cmd: ""},
    pp: {key: () => "parallel.pp", label: "Pipeline-parallel stages", toSi: (x) => x, cmd: ""},
    ep: {key: () => "parallel.ep", label: "Expert-parallel size (accelerators)", toSi: (x) => x, cmd: ""},
    gpus_per_link: {key: () => "parallel.gpus_per_link", label: "Accelerators sharing one link", toSi: (x) => x, cmd: ""},
    // the forward-pass model's terms: fields only where the build's set has the keys (regen.*)
    launch_floor: {key: () => "regen.launch_floor_per_layer", label: "Launch floor per layer (µs; 0: a CUDA graph)", toSi: (x) => x * 1e-6, fromSi: (v) => v / 1e-6, cmd: "us"},
    mem_overhead: {key: () => "regen.mem_overhead_per_layer", label: "Memory overhead per layer (µs)", toSi: (x) => x * 1e-6, fromSi: (v) => v / 1e-6, cmd: "us"},
    knee: {key: () => "regen.knee_sharpness", label: "Knee sharpness (0: the plain maximum)", toSi: (x) => x, cmd: ""},
  };
  const present = () => Object.entries(NUMBER_FIELDS).filter(([, f]) => f.key() in P().keys);
  const CHOICE_FIELDS = {
    model: "model", kv_dtype: "kv_dtype", weight_dtype: "weight_dtype", engine: "engine", layout: "fetch_layout",
  };

  const NUMBER = /^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$/;
  // kvtier.units._NUMBER's rule: commas only as thousands separators ("1,024"), so "1,5" is refused, not read as 15
  const COMMAS = /^[+-]?\d{1,3}(,\d{3})+(\.\d*)?([eE][+-]?\d+)?$/;
  const plain = (text) => {
    const t = text.trim().replace(/_/g, "");
    return t.includes(",") && !COMMAS.test(t) ? null : t.replace(/,/g, "");
  };
  const shortest = (x) => Number(x.toPrecision(12)).toString(); // a starting value as a reader would type it
  const engineering = (x) => { // 70e9 rather than 70000000000
    if (x < 1e6) return shortest(x);
    const e = Math.floor(Math.log10(x) / 3) * 3;
    return `${shortest(x / 10 ** e)}e${e}`;
  };

  let counter = 0;

  function el(tag, attrs = {}, ...children) {
    const node = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs)) {
      if (k === "text") node.textContent = v;
      else node.setAttribute(k, v);
    }
    for (const c of children) node.append(c);
    return node;
  }

  const LINK_PREFIX = "#calc:"; // the address of a page whose calculator shows typed values

  class Calculator {
    constructor(root) {
      this.root = root;
      this.id = `kvtier-calc-${++counter}`;
      this.inputs = {};
      this.messages = {};
      this.start = {};
      this.build();
      const restored = this.restore();
      this.update();
      if (restored) this.root.scrollIntoView();
    }

    fid(name) { return `${this.id}-${name}`; }

    // ---- a link that carries the values: #calc:NAME=VALUE&... (only the fields that differ from the start) ----
    restore() {
      const hash = window.location.hash;
      if (!hash.startsWith(LINK_PREFIX)) return false;
      const params = new URLSearchParams(hash.slice(LINK_PREFIX.length));
      for (const [name, value] of params) {
        const control = this.inputs[name];
        if (!control) continue;
        if (control.tagName === "SELECT" && ![...control.options].some((o) => o.value === value)) continue;
        control.value = value;
      }
      return true;
    }

    link() {
      const params = new URLSearchParams();
      for (const [name, control] of Object.entries(this.inputs)) {
        if (control.value !== this.start[name]) params.set(name, control.value);
      }
      const query = params.toString();
      const base = window.location.href.split("#")[0];
      return query ? `${base}${LINK_PREFIX}${query}` : base;
    }

    remember() {
      const url = this.link();
      this.linkText.textContent = url;
      if (window.location.hash && !window.location.hash.startsWith(LINK_PREFIX)) return; // an anchor the reader followed
      try { window.history.replaceState(null, "", url); } catch (e) { /* a page the browser keeps from rewriting */ }
    }

    field(parent, name, label, control, hint = "") {
      const id = this.fid(name);
      control.id = id;
      control.name = name;
      const msg = el("span", {class: "kvtier-calc-msg", id: `${id}-msg`, "aria-live": "polite"});
      const describedBy = [`${id}-msg`];
      const wrap = el("div", {class: "kvtier-calc-field"}, el("label", {for: id, text: label}), control);
      if (hint) {
        wrap.append(el("span", {class: "kvtier-calc-hint", id: `${id}-hint`, text: hint}));
        describedBy.push(`${id}-hint`);
      }
      wrap.append(msg);
      control.setAttribute("aria-describedby", describedBy.join(" "));
      parent.append(wrap);
      this.inputs[name] = control;
      this.messages[name] = msg;
      control.addEventListener("input", () => this.changed(name));
      control.addEventListener("change", () => this.changed(name));
      return control;
    }

    select(options, value) {
      const s = el("select");
      for (const [v, text] of options) s.append(el("option", {value: v, text}));
      s.value = value;
      return s;
    }

    text(name, value) {
      const t = el("input", {type: "text", inputmode: "decimal", autocomplete: "off", spellcheck: "false"});
      t.value = value;
      this.start[name] = value;
      return t;
    }

    numberStart(name) {
      const f = NUMBER_FIELDS[name];
      const v = P().keys[f.key()].value;
      if (v === null) return "";
      if (name === "param_count") return engineering(v);
      return f.fromSi ? shortest(f.fromSi(v)) : shortest(v);
    }

    build() {
      const p = P();
      const k = p.keys;
      const form = el("form", {class: "kvtier-calc-form", novalidate: "", "aria-label": "Fetch or regenerate: your numbers"});
      form.addEventListener("submit", (e) => e.preventDefault());

      const modelSet = el("fieldset", {}, el("legend", {text: "Model and block"}));
      const modelNames = Object.keys(p.models);
      this.field(modelSet, "model", "Model", this.select(modelNames.map((n) => [n, p.models[n].name]), k.model.value));
      const dtypes = Object.keys(p.dtype_bytes).map((d) => [d, `${d} (${p.dtype_bytes[d]} B)`]);
      this.field(modelSet, "kv_dtype", "KV-cache element type", this.select(dtypes, k.kv_dtype.value));
      // auto: the model's published weight dtype (its config's quantization_config or torch_dtype), as the package
      const weightDtypes = [["auto", "auto (the model's published)"],
        ...Object.keys(p.weight_dtype_bytes).map((d) => [d, `${d} (${p.weight_dtype_bytes[d]} B)`])];
      this.field(modelSet, "weight_dtype", "Weight element type", this.select(weightDtypes, k.weight_dtype.value));
      this.field(modelSet, "param_count", NUMBER_FIELDS.param_count.label, this.text("param_count", this.numberStart("param_count")));
      this.facts = el("p", {class: "kvtier-calc-facts", id: this.fid("facts"), "aria-live": "polite"});
      modelSet.append(this.facts);
      const engines = [["none", "none"], ...p.engine_presets.map((e) => [e, `${e} (${p.engines[e].block_tokens} tokens)`])];
      this.field(modelSet, "engine", "Serving engine's layout (none: block and layout as typed)", this.select(engines, k.engine.value));
      this.field(modelSet, "block_tokens", NUMBER_FIELDS.block_tokens.label, this.text("block_tokens", this.numberStart("block_tokens")));

      const linkSet = el("fieldset", {}, el("legend", {text: "Link to the tier"}));
      const linkOptions = [["", "typed below"], ...p.tiers.map((t) => [t.name, t.title])];
      this.field(linkSet, "link", "Link preset (fills bandwidth and latency)", this.select(linkOptions, ""));
      this.field(linkSet, "bandwidth", NUMBER_FIELDS.bandwidth.label, this.text("bandwidth", this.numberStart("bandwidth")));
      this.field(linkSet, "latency", NUMBER_FIELDS.latency.label, this.text("latency", this.numberStart("latency")));
      this.field(linkSet, "layout", "Layout in the tier", this.select([["contiguous", "contiguous: one transfer"], ["per-layer", "one per layer chunk"]], k.fetch_layout.value));

      const accSet = el("fieldset", {}, el("legend", {text: "Accelerator that regenerates"}));
      const accOptions = [["", "typed below"], ...Object.entries(p.accelerators).map(([n, a]) => [n, a.title])];
      this.field(accSet, "accelerator", "Accelerator preset (fills peak, memory bandwidth and memory)", this.select(accOptions, ""));
      this.field(accSet, "peak", NUMBER_FIELDS.peak.label, this.text("peak", this.numberStart("peak")));
      this.field(accSet, "mfu", NUMBER_FIELDS.mfu.label, this.text("mfu", this.numberStart("mfu")));
      this.field(accSet, "mem_bandwidth", NUMBER_FIELDS.mem_bandwidth.label, this.text("mem_bandwidth", this.numberStart("mem_bandwidth")));
      this.field(accSet, "mem_efficiency", NUMBER_FIELDS.mem_efficiency.label, this.text("mem_efficiency", this.numberStart("mem_efficiency")));
      this.field(accSet, "hbm_capacity", NUMBER_FIELDS.hbm_capacity.label, this.text("hbm_capacity", this.numberStart("hbm_capacity")));
      for (const n of ["launch_floor", "mem_overhead", "knee"]) {
        if (NUMBER_FIELDS[n].key() in k) this.field(accSet, n, NUMBER_FIELDS[n].label, this.text(n, this.numberStart(n)));
      }
      // regen.model: the MFU of the peak (and the roofline alone), or an engine's measured kernels on an accelerator
      // preset, tabulated for this book's model and placement (kvtier.pipeline.calculator.engine_kernels)
      const regenOptions = [["mfu", "MFU of the peak"],
        ...p.engine_kernels.map((c, j) => [String(j), `${c.accelerator}: ${c.engine} ${c.version}`])];
      const regenStart = p.engine_kernels_start === null ? "mfu" : String(p.engine_kernels_start);
      this.field(accSet, "regen", "Regeneration timed by (the chapter's MFU, or an engine's measured kernels)",
        this.select(regenOptions, regenStart));

      const parSet = el("fieldset", {}, el("legend", {text: "Placement across accelerators"}));
      for (const n of ["tp", "pp", "ep", "gpus_per_link"]) this.field(parSet, n, NUMBER_FIELDS[n].label, this.text(n, this.numberStart(n)));

      const regimeSet = el("fieldset", {}, el("legend", {text: "Regime of the headline"}));
      this.field(regimeSet, "regime", "Regenerated inside a batch (its marginal compute) or alone (the roofline)", this.select([["batch", "inside a batch"], ["lone", "as a lone block"]], "batch"));

      // the split's prompt (kvtier compare --split --prefix N --suffix M; empty: compare's defaults)
      const splitSet = el("fieldset", {}, el("legend", {text: "A prompt that reuses a prefix (the split)"}));
      this.field(splitSet, "prefix", "Prefix the tier holds (tokens; empty: the chapter's interior position, within the model's window)", this.text("prefix", ""));
      this.field(splitSet, "new_tokens", "New tokens after it (empty: one block)", this.text("new_tokens", ""));

      for (const [name, control] of Object.entries(this.inputs)) if (control.tagName === "SELECT") this.start[name] = control.value;
      form.append(modelSet, linkSet, accSet, parSet, regimeSet, splitSet);

      this.out = el("div", {class: "kvtier-calc-out", id: this.fid("out"), "aria-live": "polite"});
      this.linkText = el("code", {id: this.fid("link")});
      const copyLink = el("button", {type: "button", class: "kvtier-calc-copy-link", text: "Copy a link to these values"});
      copyLink.addEventListener("click", () => this.copy(copyLink, this.linkText, "Copy a link to these values"));
      this.tiers = el("div", {class: "kvtier-calc-tiers"});
      this.split = el("div", {class: "kvtier-calc-split"});
      this.money = el("div", {class: "kvtier-calc-money-box"});
      this.cmd = el("code", {id: this.fid("command")});
      const copy = el("button", {type: "button", class: "kvtier-calc-copy", text: "Copy the command"});
      copy.addEventListener("click", () => this.copy(copy, this.cmd, "Copy the command"));
      const reset = el("button", {type: "button", class: "kvtier-calc-reset", text: "Back to this book's values"});
      reset.addEventListener("click", () => { this.root.textContent = ""; this.inputs = {}; this.messages = {}; this.start = {}; this.build(); this.update(); });
      this.root.textContent = "";
      // the answer beside the fields (a column of its own on a wide screen, kept in view on a narrow one)
      const answer = el("aside", {class: "kvtier-calc-answer", "aria-label": "The answer for these values"},
        el("h3", {text: "The answer for these values"}), this.out);
      this.root.append(
        el("p", {class: "kvtier-calc-intro", text: `Starting values: the assumption set this book was built from (${p.set_name}). Nothing leaves your browser; the page's address carries the values you type.`}),
        el("div", {class: "kvtier-calc-main"}, answer, form),
        el("h3", {text: "Which tiers fetch faster than regeneration"}), this.tiers,
        el("h3", {text: "A reused prefix: regenerate, fetch, or both at once"}), this.split,
        el("h3", {text: "What the trace's tier costs and saves, per accelerator"}), this.money,
        el("h3", {text: "Rebuild the whole book with these values"}),
        el("pre", {class: "kvtier-calc-command"}, this.cmd),
        el("div", {class: "kvtier-calc-buttons"}, copy, reset),
        el("h3", {text: "A link to these values"}),
        el("pre", {class: "kvtier-calc-command kvtier-calc-link"}, this.linkText),
        el("div", {class: "kvtier-calc-buttons"}, copyLink),
      );
    }

    copy(button, source, label) {
      const text = source.textContent;
      const done = () => { button.textContent = "Copied"; setTimeout(() => { button.textContent = label; }, 1500); };
      if (navigator.clipboard && window.isSecureContext) navigator.clipboard.writeText(text).then(done, () => this.selectText(source));
      else this.selectText(source);
    }

    selectText(source) {
      const range = document.createRange();
      range.selectNodeContents(source);
      const sel = window.getSelection();
      sel.removeAllRanges();
      sel.addRange(range);
      try { document.execCommand("copy"); } catch (e) { /* selected: the reader copies it */ }
    }

    changed(name) {
      const p = P();
      const i = this.inputs;
      if (name === "model") { // a new model brings its own parameter count and weight dtype (_follow_model)
        i.param_count.value = "";
        i.weight_dtype.value = "auto";
      }
      if (name === "engine") { // a new engine brings its own block (_follow_engine); none: the seed's
        const e = p.engines[i.engine.value];
        i.block_tokens.value = e ? String(e.block_tokens) : shortest(p.keys.block_tokens.seed_value);
      }
      if (name === "link" && i.link.value) {
        const t = p.tiers.find((x) => x.name === i.link.value);
        i.bandwidth.value = shortest(t.bandwidth / 1e9);
        i.latency.value = shortest(p.keys[t.latency_key].value / 1e-6);
      }
      if ((name === "bandwidth" || name === "latency") && i.link.value) i.link.value = "";
      if (name === "accelerator" && i.accelerator.value) {
        const a = p.accelerators[i.accelerator.value];
        i.peak.value = a.peak_flops === null ? "" : shortest(a.peak_flops / 1e12);
        i.mem_bandwidth.value = shortest(a.mem_bandwidth / 1e9);
        i.hbm_capacity.value = a.memory === null ? "" : shortest(a.memory / 1e9); // empty: not checked
      }
      if ((name === "peak" || name === "mem_bandwidth" || name === "hbm_capacity") && i.accelerator.value) i.accelerator.value = "";
      this.update();
    }

    // ---- reading and checking the fields -----------------------------------------------------------------
    read() {
      const p = P();
      const i = this.inputs;
      const errors = {};
      const values = {};
      for (const [name, f] of present()) {
        const raw = plain(i[name].value);
        const spec = p.keys[f.key()];
        if (raw === null) { errors[name] = `“${i[name].value.trim().slice(0, 20)}”: a comma only between thousands (1,024); write a decimal point (1.5).`; continue; }
        if (raw === "" && f.nullable) { values[name] = null; continue; }
        if (raw === "") { errors[name] = name === "peak" ? "This accelerator publishes no peak: type one." : "Type a number."; continue; }
        if (!NUMBER.test(raw)) { errors[name] = `“${i[name].value.trim().slice(0, 20)}” is not a number.`; continue; }
        const typed = Number(raw);
        const si = f.toSi(typed);
        if (!Number.isFinite(si)) { errors[name] = "That number is too large."; continue; }
        if (spec.integer && !Number.isInteger(si)) { errors[name] = "Must be a whole number."; continue; }
        if (si < spec.low || si > spec.high) {
          const show = (v) => (f.fromSi ? sig(f.fromSi(v), 4) : sig(v, 4));
          errors[name] = `Must lie between ${show(spec.low)} and ${show(spec.high)}${f.cmd ? " " + f.cmd.replace("us", "µs") : ""}.`;
          continue;
        }
        values[name] = {typed, si};
      }
      const model = p.models[i.model.value];
      const num = (n) => (values[n] ? values[n].si : null);
      const [tp, pp, ep] = [num("tp"), num("pp"), num("ep")];
      // Scenario.placement's rules
      if (tp !== null && ep !== null && Math.max(tp, ep) % Math.min(tp, ep)) errors.ep = `The larger of the tensor-parallel (${tp}) and expert-parallel (${ep}) sizes must be a multiple of the smaller.`;
      if (ep !== null && ep > 1 && model.routed_experts < ep) errors.ep = `Expert parallelism over ${ep} needs an MoE model with at least ${ep} routed experts; ${model.name} has ${model.routed_experts}.`;
      if (pp !== null && pp > model.layers) errors.pp = `At most the model's ${model.layers} layers.`;
      // kvtier.scenario.placement.tp_refused: what serving engines refuse
      if (tp !== null && model.heads % tp) errors.tp = `${model.name} has ${model.heads} attention heads, which ${tp} ranks do not divide; serving engines refuse it.`;
      else if (tp !== null && !model.mla && model.kv_heads % tp && tp % model.kv_heads) errors.tp = `${model.name} has ${model.kv_heads} KV heads, which ${tp} ranks neither divide nor replicate (${tp} is no multiple of them); serving engines refuse it.`;
      // the split's prompt: whole numbers of tokens as kvtier compare's --prefix (from 0) and --suffix (from 1)
      for (const [name, low] of [["prefix", 0], ["new_tokens", 1]]) {
        const raw = plain(i[name].value);
        values[name] = null;
        if (raw === "") continue;
        const n = Number(raw);
        if (raw === null || !NUMBER.test(raw) || !Number.isInteger(n) || n < low || n > 1e7) {
          errors[name] = `A whole number of tokens from ${low} to 10,000,000.`;
        } else values[name] = n;
      }
      const knee = num("knee"); // Scenario.knee_sharpness
      if (knee !== null && knee !== 0 && knee < 1) errors.knee = "0 (the plain maximum) or at least 1.";
      const kernels = i.regen.value === "mfu" ? null : p.engine_kernels[Number(i.regen.value)];
      if (kernels) { // the curves hold for the model, placement and element types they were tabulated for
        const f = kernels.for;
        const top = kernels.tokens[kernels.tokens.length - 1];
        const block = num("block_tokens");
        const other = [];
        if (i.model.value !== f.model) other.push(`the model ${p.models[f.model] ? p.models[f.model].name : f.model}`);
        if (tp !== f.tp || pp !== f.pp || ep !== f.ep) other.push(`tensor-parallel ${f.tp}, ${f.pp} pipeline stage${f.pp > 1 ? "s" : ""}, expert-parallel ${f.ep}`);
        if (i.kv_dtype.value !== f.kv_dtype) other.push(`a ${f.kv_dtype} KV cache`);
        if (this.weightDtype(model) !== f.weight_dtype) other.push(`${f.weight_dtype} weights`);
        if (block !== null && block > top) other.push(`blocks of at most ${top.toLocaleString("en-US")} tokens (the tables' grid)`);
        if (other.length) {
          errors.regen = `These kernels are tabulated for ${other.join(", ")}; for these values run kvtier compare` +
            ` --regen-model engine --accelerator ${kernels.accelerator} --engine ${kernels.engine}.`;
        }
      }
      return {values, errors, model, kernels};
    }

    inputsFor(values, model, kernels = null) {
      const p = P();
      const i = this.inputs;
      const k = p.keys;
      const v = (n) => values[n].si;
      return {
        model,
        kvDtypeBytes: p.dtype_bytes[i.kv_dtype.value],
        weightDtypeBytes: p.weight_dtype_bytes[this.weightDtype(model)],
        paramCount: values.param_count === null ? null : v("param_count"),
        blockTokens: v("block_tokens"),
        flopsPerParamToken: k.flops_per_param_token.value,
        peak: v("peak"), mfu: v("mfu"), memBandwidth: v("mem_bandwidth"), memEfficiency: v("mem_efficiency"),
        bandwidth: v("bandwidth"), latency: v("latency"), layout: i.layout.value,
        engine: p.engines[i.engine.value] || null,
        tp: v("tp"), pp: v("pp"), ep: v("ep"), gpusPerLink: v("gpus_per_link"),
        activationBytes: p.dtype_bytes[k["parallel.activation_dtype"].value],
        nvlinkBandwidth: k["collective.nvlink_bandwidth"].value, nvlinkLatency: k["collective.nvlink_latency"].value,
        ibBandwidth: k["collective.ib_bandwidth"].value, ibLatency: k["collective.ib_latency"].value,
        hbmCapacity: values.hbm_capacity === null ? null : v("hbm_capacity"), contextLong: model.max_positions ? Math.min(k["context.long"].value, model.max_positions) : k["context.long"].value,
        // the forward-pass model's terms (regen.*): a set without a key has the plain roofline's value
        memOverheadPerLayer: values.mem_overhead ? v("mem_overhead") : 0,
        launchFloorPerLayer: values.launch_floor ? v("launch_floor") : 0,
        kneeSharpness: values.knee ? v("knee") : 0, attention: keyOr("regen.attention", "streamed"),
        attentionFixedPerLayer: keyOr("regen.attention_fixed_per_layer", 0), attentionEfficiency: keyOr("regen.attention_efficiency", 1),
        // the transfer model's terms (fetch.*), from the build's set: a set without a key has the chapter's fetch
        minTransfer: keyOr("fetch.min_transfer_time", 0), hostMemory: keyOr("fetch.host_memory", "pinned"),
        pageableEfficiency: keyOr("fetch.pageable_efficiency", 1), pageableOverhead: keyOr("fetch.pageable_overhead", 0),
        contention: keyOr("fetch.contention", "none"), duplexEfficiency: keyOr("fetch.duplex_efficiency", 1),
        // how each copy is issued (fetch.copy_method) and each method's per-copy cost (fetch.copy_cost.*)
        engineKernels: kernels, // the engine model's curves (null: the MFU and the roofline)
        copyMethod: keyOr("fetch.copy_method", "none"),
        copyCosts: {"lone-dma": keyOr("fetch.copy_cost.lone_dma", 0), "batched-dma": keyOr("fetch.copy_cost.batched_dma", 0),
          kernel: keyOr("fetch.copy_cost.kernel", 0)},
      };
    }

    // the weight element type counted: the field's, or for auto the model's published one (resolve_weight_dtype)
    weightDtype(model) {
      const d = this.inputs.weight_dtype.value;
      return d === "auto" ? model.weight_dtype || "bf16" : d;
    }

    // ---- the answer ------------------------------------------------------------------------------------
    update() {
      const p = P();
      this.remember();
      const {values, errors, model, kernels} = this.read();
      for (const [name, msg] of Object.entries(this.messages)) {
        msg.textContent = errors[name] || "";
        this.inputs[name].setAttribute("aria-invalid", errors[name] ? "true" : "false");
      }
      const m = model;
      const kvBytes = m.kv_elements_per_token * p.dtype_bytes[this.inputs.kv_dtype.value];
      this.facts.textContent = `${m.name}: ${m.layers} layers, ${m.kv_heads} KV heads (${m.attention}), ` +
        `${fmtCount(m.total_params)} parameters in its config${m.routed_experts ? ` (${fmtCount(m.active_params)} active a token)` : ""}, ` +
        `${fmtBytes(kvBytes)} of KV per token in ${this.inputs.kv_dtype.value}, ` +
        `weights in ${this.weightDtype(m)}${this.inputs.weight_dtype.value === "auto" ? " (as published)" : ""}, ` +
        (m.max_positions ? `a context window of ${m.max_positions.toLocaleString("en-US")} tokens.` : "no context window stated.");
      this.out.textContent = "";
      this.tiers.textContent = "";
      this.money.textContent = "";
      this.split.textContent = "";
      const bad = Object.keys(errors);
      if (bad.length) {
        this.out.append(el("p", {class: "kvtier-calc-refused", text: `No answer until the ${bad.length === 1 ? "field marked above is" : bad.length + " fields marked above are"} fixed.`}));
        this.cmd.textContent = "(fix the marked fields first)";
        this.root.dataset.state = "refused";
        return;
      }
      const s = new (F().Scenario)(this.inputsFor(values, model, kernels));
      if (!s.fitsMemory()) { // Scenario.check_fit's refusal and its figures (GB, one decimal)
        const cap = s.i.hbmCapacity;
        const [n, tp, pp] = s.minAccelerators(cap);
        const fix = n ? `at least ${n} accelerators (e.g. tensor-parallel ${tp}, ${pp} pipeline stage${pp > 1 ? "s" : ""})` : "more than 1,024 accelerators";
        this.messages.tp.textContent = `Each accelerator must hold ${fmtGB(s.rankMemoryBytes())} (its weights in ${this.weightDtype(m)} and one sequence of ` +
          `${s.i.contextLong.toLocaleString("en-US")} tokens of KV), more than its ${fmtGB(cap)} of memory; ${m.name} needs ${fix}, ` +
          "or empty the memory field to price it on fewer anyway.";
        this.out.append(el("p", {class: "kvtier-calc-refused", text: "No answer: the placement does not fit its accelerators' memory."}));
        this.cmd.textContent = "(the placement does not fit its accelerators' memory: change it first)";
        this.root.dataset.state = "refused";
        return;
      }
      const regime = this.inputs.regime.value;
      const pt = F().point(s, regime);
      const other = regime === "batch" ? "lone" : "batch";
      const ptOther = F().point(s, other);
      const words = {batch: "inside a batch", lone: "as a lone block"};
      const rows = [
        ["kv-bytes-per-token", "KV bytes per token", s.kvBytesPerToken, fmtBytes],
        ["block-bytes", `Block (${s.i.blockTokens} tokens)`, s.blockBytes, fmtBytes],
        ["fetch-bytes", "Bytes over one link", s.fetchBytes, fmtBytes],
        ["transfers", "Transfers per fetch", s.fetchTransfers, (x) => String(x)],
        ["fetch-time", "Fetch time", pt.fetch_time_s, fmtTime],
        ["regen-batch", "Regeneration inside a batch", s.batchRegenS, fmtTime],
        ["regen-lone", `Regeneration as a lone block (${kernels ? `${kernels.system} ${kernels.engine} kernels` : `${s.loneBound}-bound`})`, s.loneRegenS, fmtTime],
        ["ratio", `Regenerate / fetch, ${words[regime]}`, pt.regen_to_fetch_ratio, fmtRatio],
        ["ratio-other", `Regenerate / fetch, ${words[other]}`, ptOther.regen_to_fetch_ratio, fmtRatio],
        ["break-even-bandwidth", `Break-even bandwidth, ${words[regime]}`, pt.break_even_bandwidth_bytes_per_s,
          (x) => (Number.isFinite(x) ? fmtBandwidth(x) : "none: the latency alone outlasts regeneration")],
        ["break-even-latency", `Break-even latency per transfer, ${words[regime]}`, pt.break_even_latency_s,
          (x) => (x > 0 ? fmtTime(x) : "none: the bytes alone outlast regeneration")],
      ];
      // the LRU tier for the hit target on the book's trace, sized for these KV bytes (kvtier.analysis.lru_traffic)
      // and held at the book's prices (kvtier.formulas.tiering.hold_usd_per_byte_s)
      const tr = p.trace;
      const tierBytes = tr.capacity_blocks * tr.block_tokens * s.kvBytesPerToken;
      const usdPerHour = (x) => `${sig(x)} USD/h`;
      rows.push(
        ["tier-capacity", `LRU tier for ${sig(tr.hit_target * 100)} % of the achievable hits on the ${tr.name} trace`, tierBytes, fmtBytes],
        ["tier-hold-dram", "That tier held in host DRAM, at this book's prices", tierBytes * tr.hold_usd_per_byte_s.dram * 3600, usdPerHour],
        ["tier-hold-cxl", "That tier held in a CXL expander, at this book's prices", tierBytes * tr.hold_usd_per_byte_s.cxl * 3600, usdPerHour],
      );
      // what that tier costs and saves per accelerator in each medium (kvtier.analysis.lru_plan, inside a batch)
      const money = F().traceTiers(s, tr, p.tiers, (t) => p.keys[t.latency_key].value);
      const best = money && money.reduce((a, b) => (b.saved_usd_per_s > a.saved_usd_per_s ? b : a));
      if (best) {
        const busy = best.prefill_accelerators;
        rows.push(
          ["tier-per-accelerator", `That tier per accelerator the trace's prefill keeps busy (${sig(busy)})`, tierBytes / busy, fmtBytes],
          ["tier-saved-best", `Saved per accelerator, the tier in ${P().trace.medium_words[best.medium]} (holding and fetches paid, recomputation inside a batch)`,
            (best.saved_usd_per_s / busy) * 3600, usdPerHour],
        );
      }
      const dl = el("dl", {class: "kvtier-calc-results"});
      for (const [key, label, value, fmt] of rows) {
        dl.append(el("dt", {text: label}), el("dd", {"data-key": key, "data-si": Number.isFinite(value) ? String(value) : "inf", text: fmt(value)}));
      }
      const wins = pt.regen_to_fetch_ratio > 1;
      const verdict = el("p", {class: "kvtier-calc-verdict", "data-key": "verdict",
        text: wins ? `Fetch: over this link the block arrives ${fmtRatio(pt.regen_to_fetch_ratio)} faster than it regenerates ${words[regime]}.`
          : `Regenerate: ${words[regime]} the block is recomputed ${fmtRatio(1 / pt.regen_to_fetch_ratio)} faster than it crosses this link.`});
      this.out.append(verdict, dl);
      if (values.param_count === null && m.max_positions === 0) this.out.append(el("p", {text: "The model's config states no context window."}));

      const layout = this.inputs.layout.value;
      const ladder = F().tierLadder(s, p.tiers, (t) => p.keys[t.latency_key].value, layout);
      const table = el("table", {class: "kvtier-calc-ladder", "aria-describedby": this.fid("ladder-note")});
      const note = el("p", {class: "kvtier-calc-note", id: this.fid("ladder-note"), text: `Each tier's fetch in the ${layout === "contiguous" ? "contiguous layout (one transfer)" : `per-layer layout (${s.transfers(layout)} transfers)`}, against regeneration in both regimes; each tier's latency per transfer as this book sets it.`});
      const head = el("tr");
      for (const h of ["Tier", "Inside a batch", "Lone block", "Fetch", "Bandwidth", "Latency"]) head.append(el("th", {scope: "col", text: h}));
      table.append(el("thead", {}, head));
      const body = el("tbody");
      for (const r of ladder) {
        const tr = el("tr", {"data-tier": r.name});
        tr.append(el("td", {role: "rowheader", text: r.title})); // a td, as the book's tables: its first column stays in view
        for (const reg of ["batch", "lone"]) {
          const w = r[`${reg}_fetch_wins`];
          tr.append(el("td", {"data-regime": reg, "data-wins": String(w), "data-si": String(r[`${reg}_ratio`]),
            text: `${w ? "fetch wins" : "regenerate"} (${fmtRatio(r[`${reg}_ratio`])})`}));
        }
        tr.append(el("td", {"data-si": String(r.fetch_time_s), text: fmtTime(r.fetch_time_s)}),
          el("td", {text: fmtBandwidth(r.bandwidth)}), el("td", {text: fmtTime(r.latency)}));
        body.append(tr);
      }
      table.append(body);
      // the book's table box (kvtier.js and kvtier.css): it scrolls sideways on a narrow screen, says so, keeps the tier in view
      const box = el("div", {class: "kvtier-table-box kvtier-calc-table-box", tabindex: "0", role: "region", "aria-label": "Tier ladder"}, table);
      const wrap = el("div", {class: "kvtier-table-wrap"}, box,
        el("p", {class: "kvtier-scroll-cue", "aria-hidden": "true", text: "scroll sideways for more columns →"}));
      if (typeof window.kvtierMarkScrolling === "function") box.addEventListener("scroll", window.kvtierMarkScrolling, {passive: true});
      const nWins = ladder.filter((r) => r[`${regime}_fetch_wins`]).length;
      this.tiers.append(el("p", {"data-key": "tier-summary", text: `${nWins} of ${ladder.length} tiers fetch the block faster than it regenerates ${words[regime]}.`}), note, wrap);
      this.showMoney(money, tr);
      this.showSplit(s, values, kernels, regime);
      if (typeof window.kvtierMarkScrolling === "function") window.kvtierMarkScrolling();
      this.cmd.textContent = this.command(values);
      this.root.dataset.state = "answered";
    }

    // ---- a reused prefix served four ways over the typed link (kvtier compare --split) ---------------------
    // The prefix and new tokens: as typed, else kvtier.report.serving.split_prefix (the chapter's interior position,
    // capped so that the prompt fits the model's window, then one block).
    splitTokens(s, values) {
      const fresh = values.new_tokens === null ? s.i.blockTokens : values.new_tokens;
      if (values.prefix !== null) return [values.prefix, fresh, "as typed"];
      const position = P().keys["interior.position"].value;
      const window = s.m.max_positions;
      const capped = Boolean(window) && position + fresh > window;
      const how = `the chapter's interior position${capped ? `, capped by the model's ${window.toLocaleString("en-US")}-token window` : ""}`;
      return [capped ? Math.max(window - fresh, 0) : position, fresh, how];
    }

    showSplit(s, values, kernels, regime) {
      const [prefix, fresh, how] = this.splitTokens(s, values);
      const prompt = prefix + fresh;
      const top = kernels ? kernels.tokens[kernels.tokens.length - 1] : Infinity;
      if (prompt > top) { // RegenCosts.engine_curve's refusal
        this.split.append(el("p", {"data-key": "split-refused", text: `The ${kernels.system} ${kernels.engine} kernels are tabulated for ` +
          `prompts of at most ${top.toLocaleString("en-US")} tokens; this prompt has ${prompt.toLocaleString("en-US")}. Type a shorter prefix.`}));
        return;
      }
      const words = {batch: "Inside a batch", lone: "As a lone pass"};
      const table = el("table", {class: "kvtier-calc-ladder kvtier-calc-split-table", "aria-describedby": this.fid("split-note")});
      const head = el("tr");
      for (const h of ["Regime", "Regenerate", "Fetch", "Layer by layer", "Split", "Computed", "Gain", "Fastest"]) head.append(el("th", {scope: "col", text: h}));
      table.append(el("thead", {}, head));
      const body = el("tbody");
      const results = {};
      for (const reg of ["batch", "lone"]) {
        const r = F().bestSplit(s, prefix, prompt, reg);
        results[reg] = r;
        const row = el("tr", {"data-regime": reg});
        row.append(el("td", {role: "rowheader", text: words[reg]}));
        for (const [key, value] of [["regenerate", r.regenerate_s], ["fetch", r.fetch_s], ["overlap", r.layer_overlap_s], ["split", r.split_s]]) {
          row.append(el("td", {"data-key": `split-${reg}-${key}`, "data-si": String(value), text: fmtTime(value)}));
        }
        row.append(el("td", {"data-key": `split-${reg}-tokens`, "data-si": String(r.split_tokens), text: r.split_tokens.toLocaleString("en-US")}),
          el("td", {"data-key": `split-${reg}-gain`, "data-si": String(r.gain_over_better_pure), text: fmtGain(r.gain_over_better_pure)}),
          el("td", {"data-key": `split-${reg}-fastest`, "data-word": r.fastest, text: r.fastest}));
        body.append(row);
      }
      table.append(body);
      const r = results[regime];
      const pure = {fetch: "fetching the prefix", regenerate: "regenerating the prompt"}[r.better_pure];
      const lead = r.splits
        ? `${words[regime]}, computing the first ${r.split_tokens.toLocaleString("en-US")} of the prefix's ${prefix.toLocaleString("en-US")} tokens ` +
          `while the tier sends the rest serves the prompt in ${fmtTime(r.split_s)}, ` +
          (r.gain_over_better_pure < 1.01 ? `within 1 % of ${pure}, the better pure way.` : `${fmtGain(r.gain_over_better_pure)} faster than ${pure}, the better pure way.`)
        : `${words[regime]}, no split is faster than ${pure} (${fmtTime(Math.min(r.regenerate_s, r.fetch_s))}).`;
      const overlap = s.i.engine ? (s.i.engine.layer_overlap ? "this engine loads layer by layer under the pass" : "this engine does not load layer by layer")
        : "no engine is chosen, so none loads layer by layer";
      const note = el("p", {class: "kvtier-calc-note", id: this.fid("split-note"), "data-key": "split-note",
        text: `A prompt of ${prompt.toLocaleString("en-US")} tokens whose first ${prefix.toLocaleString("en-US")} the tier holds (${how}), ` +
          `then ${fresh.toLocaleString("en-US")} new. Regenerate: the whole prompt prefilled. Fetch: the prefix over this link in this layout's ` +
          `copies, then the new tokens. Layer by layer: that fetch loaded under the pass (${overlap}). Split: the first tokens computed from ` +
          "the start while the rest of the prefix is fetched, on the engine's block boundaries; the gain is over the faster of regenerate and " +
          "fetch. kvtier compare --split gives the same."});
      const box = el("div", {class: "kvtier-table-box kvtier-calc-table-box", tabindex: "0", role: "region", "aria-label": "The split of a reused prefix"}, table);
      if (typeof window.kvtierMarkScrolling === "function") box.addEventListener("scroll", window.kvtierMarkScrolling, {passive: true});
      this.split.append(el("p", {"data-key": "split-lead", text: lead}), note, el("div", {class: "kvtier-table-wrap"}, box,
        el("p", {class: "kvtier-scroll-cue", "aria-hidden": "true", text: "scroll sideways for more columns →"})));
    }

    // ---- the trace's tier in each medium: what it holds, fetches and saves per accelerator ----------------
    showMoney(money, tr) {
      this.money.textContent = "";
      if (!money) {
        this.money.append(el("p", {"data-key": "money-refused", text: `Under measured kernels this calculator does not price the ${tr.name} trace's ` +
          "tier: its prompts are summed for the analytic model only (choose “MFU of the peak”, or rebuild the book with the command below, whose cost page prices it)."}));
        return;
      }
      const busy = money[0].prefill_accelerators;
      const perAcc = (x) => `${sig((x / busy) * 3600)} USD/h`;
      const table = el("table", {class: "kvtier-calc-ladder kvtier-calc-money", "aria-describedby": this.fid("money-note")});
      const head = el("tr");
      for (const h of ["Medium", "Holding", "Fetching", "Saved", "Saved, whole fleet"]) head.append(el("th", {scope: "col", text: h}));
      table.append(el("thead", {}, head));
      const body = el("tbody");
      for (const m of money) {
        const row = el("tr", {"data-medium": m.medium});
        const drives = m.drives ? ` (${m.drives.count.toLocaleString("en-US")} drives)` : "";
        row.append(el("td", {role: "rowheader", text: `${P().trace.medium_words[m.medium]}${drives}`}));
        for (const [key, value] of [["hold", m.hold_usd_per_s], ["fetch", m.fetch_usd_per_s], ["saved", m.saved_usd_per_s]]) {
          row.append(el("td", {"data-key": `${key}-${m.medium}`, "data-si": String(value), text: perAcc(value)}));
        }
        row.append(el("td", {"data-key": `saved-fleet-${m.medium}`, "data-si": String(m.saved_usd_per_s), text: `${sig(m.saved_usd_per_s * 3600)} USD/h`}));
        body.append(row);
      }
      table.append(body);
      const nvme = money.find((m) => m.drives);
      const wear = nvme ? ` NVMe buys the most drives of three counts: ${nvme.drives.forCapacity} for the tier's bytes, ` +
        `${nvme.drives.forBandwidth} for its write rate (${fmtBandwidth(nvme.write_bytes_per_s)}) and ${nvme.drives.forEndurance} for their wear; ` +
        `flash of the tier's own size would wear out in ${sig(nvme.drives.wearoutS / 86400)} days.` : "";
      const note = el("p", {class: "kvtier-calc-note", id: this.fid("money-note"), "data-key": "money-note",
        text: `The ${tr.name} trace's LRU tier for ${sig(tr.hit_target * 100)} % of its achievable hits (${fmtBytes(money[0].capacity_bytes)}), per ` +
          `accelerator its prefill keeps busy with no cache (${sig(busy)}), recomputation priced inside a batch at these values' peak and MFU, ` +
          `an accelerator hour of ${sig(tr.accelerator_usd_per_s * 3600)} USD and this book's prices for each medium; each hit prefix is ` +
          `fetched in this layout's copies at the tier's latency as this book sets it.${wear}`});
      const box = el("div", {class: "kvtier-table-box kvtier-calc-table-box", tabindex: "0", role: "region", "aria-label": "The trace's tier per medium"}, table);
      if (typeof window.kvtierMarkScrolling === "function") box.addEventListener("scroll", window.kvtierMarkScrolling, {passive: true});
      this.money.append(note, el("div", {class: "kvtier-table-wrap"}, box,
        el("p", {class: "kvtier-scroll-cue", "aria-hidden": "true", text: "scroll sideways for more columns →"})));
    }

    // ---- the command that rebuilds the book with these values ---------------------------------------
    // `kvtier build --set ...` starts from the seed set, so the command names every key whose value here
    // differs from the seed's (the book's own set where no field stands for the key), follows the package's
    // rules (a new model brings its own parameter count and weight dtype, a new engine its block), and moves a bracket or an
    // uncertainty range where a typed value would fall outside it (the build checks the set as a whole).
    command(values) {
      const p = P();
      const k = p.keys;
      const eff = {};
      const text = {};
      for (const [key, rec] of Object.entries(k)) { eff[key] = rec.value; text[key] = rec.text; }
      for (const [name, key] of Object.entries(CHOICE_FIELDS)) { eff[key] = this.inputs[name].value; text[key] = this.inputs[name].value; }
      const kernels = this.inputs.regen.value === "mfu" ? null : p.engine_kernels[Number(this.inputs.regen.value)];
      if (kernels) { // the engine model on that accelerator's tables (regen.model, regen.system, regen.engine)
        const pick = {"regen.model": "engine", "regen.system": kernels.system, "regen.engine": kernels.engine};
        for (const [key, value] of Object.entries(pick)) { eff[key] = value; text[key] = value; }
      } else if (eff["regen.model"] === "engine") { eff["regen.model"] = "mfu"; text["regen.model"] = "mfu"; }
      for (const [name, f] of present()) {
        const key = f.key();
        const val = values[name];
        const typedNow = this.inputs[name].value.trim();
        if (typedNow === this.start[name] && !(name === "param_count" && eff.model !== k.model.value)) continue; // untouched: the book's own
        if (val === null) { eff[key] = null; text[key] = "null"; continue; }
        eff[key] = val.si;
        text[key] = `${String(val.typed)}${f.cmd}`;
      }
      // brackets ordered around the illustrative one, and each uncertainty range holding its values
      const widen = (keys, pivot) => {
        const at = keys.indexOf(pivot);
        keys.forEach((key, j) => {
          if ((j < at && eff[key] < eff[pivot]) || (j > at && eff[key] > eff[pivot])) { eff[key] = eff[pivot]; text[key] = text[pivot]; }
        });
      };
      widen(p.bandwidth_labels.map((b) => `bandwidth.${b}`), `bandwidth.${illus("bandwidth")}`);
      widen(p.mfu_labels.map((b) => `mfu.${b}`), `mfu.${illus("mfu")}`);
      for (const [name, points] of Object.entries(p.uncertain_points)) {
        const hi = `uncertainty.${name}_high`;
        const lo = `uncertainty.${name}_low`;
        const top = points[0];
        const bottom = points[points.length - 1];
        if (eff[top] > eff[hi]) { eff[hi] = eff[top]; text[hi] = text[top]; }
        if (eff[bottom] < eff[lo]) { eff[lo] = eff[bottom]; text[lo] = text[bottom]; }
      }
      // what the seed would give for the keys that follow others
      const implied = {};
      implied.param_count = eff.model !== k.model.seed_value ? null : k.param_count.seed_value;
      implied.weight_dtype = eff.model !== k.model.seed_value ? "auto" : k.weight_dtype.seed_value;
      const engine = p.engines[eff.engine];
      implied.block_tokens = eff.engine !== k.engine.seed_value ? (engine ? engine.block_tokens : k.block_tokens.seed_value) : k.block_tokens.seed_value;
      const parts = ["kvtier", "build"];
      for (const key of Object.keys(k)) {
        const base = key in implied ? implied[key] : k[key].seed_value;
        if (eff[key] === base) continue;
        parts.push("--set", quote(`${key}=${eff[key] === null ? "null" : text[key]}`));
      }
      parts.push("--out", "runs/mine");
      return parts.join(" ");
    }
  }

  const keyOr = (key, fallback) => (key in P().keys ? P().keys[key].value : fallback);
  const quote = (s) => (/^[A-Za-z0-9_.,:=/%+@-]+$/.test(s) ? s : `'${s.replace(/'/g, "'\\''")}'`);

  function start() {
    const roots = document.querySelectorAll("#kvtier-calculator, .kvtier-calculator");
    if (!roots.length) return;
    if (!P() || !F()) {
      for (const r of roots) r.textContent = "The calculator's data did not load (_static/kvtier-presets.js, _static/kvtier-formulas.js).";
      return;
    }
    window.kvtierCalculators = [...roots].map((r) => new Calculator(r));
  }
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start);
  else start();
})();
