'use strict';
// Runs ONNX models with onnxruntime-node (Windows build) under Wine.
//
// Usage: node.exe worker.js JOB.json
//
// All data is exchanged through files: Node's stdout/stderr streams are not
// usable on pipes under Wine, so nothing here writes to process.stdout.
//
// JOB.json is either one job or {"jobs": [job, ...], ...}.  A job:
//   {"model": path | {"offset", "length"}, "ep": "dml"|"cpu", "disable_cpu_ep_fallback": bool,
//    "inputs": [{"name", "dtype", "dims", "file" | "offset" + "length"}], "outputs": [names],
//    "out_file": path | "out_dir": path, "result": path, "warmup": 0, "repeat": 1, "keep_runs": false,
//    "verbose": bool, "graph_optimization_level": "disabled",
//    "session_config": {key: value}}
// Batch-level keys (optional): "ort_dir" (folder of onnxruntime-node),
//   "blob" (one file holding the models and inputs that jobs give by offset and length: one file
//   read per batch instead of one per tensor, since each file costs milliseconds under Wine),
//   "progress" (JSON-lines file: one line per stage change, appended
//   synchronously so it survives a crash), "status" (final status file),
//   "log" (path of the captured stderr, reported back in each result).
// Outputs: with "out_file", all of a job's outputs in that one file (each at an 8-byte aligned
// offset, named in the result); with "out_dir", one file per output.
// Paths may be POSIX paths (mapped through Wine's Z: drive) or Windows paths.
// Each job's result is written (atomically) to its own "result" file as soon
// as that job finishes, so a crash later in the list loses nothing earlier.
// "warmup" untimed runs precede the "repeat" timed ones (timings_ms.runs: each timed run).

const fs = require('fs');

function winPath(p) {
  if (typeof p === 'string' && p.startsWith('/')) {
    return 'Z:' + p.replace(/\//g, '\\');
  }
  return p;
}

function joinPath(dir, name) {
  if (dir.endsWith('/') || dir.endsWith('\\')) return dir + name;
  return dir + (dir.startsWith('/') ? '/' : '\\') + name;
}

function writeAtomic(p, text) {
  const w = winPath(p);
  const tmp = w + '.tmp';
  fs.writeFileSync(tmp, text);
  fs.renameSync(tmp, w);
}

function errorText(e) {
  if (e === null || e === undefined) return String(e);
  if (e instanceof Error) return e.message !== undefined ? String(e.message) : String(e);
  if (typeof e === 'object') {
    try { return JSON.stringify(e); } catch (_) { /* fall through */ }
  }
  return String(e);
}

function errorStack(e) {
  return (e && e.stack) ? String(e.stack) : null;
}

function nowMs() {
  return Number(process.hrtime.bigint()) / 1e6;
}

const ARRAY_TYPES = {
  float32: Float32Array,
  float64: Float64Array,
  float16: Uint16Array,
  int8: Int8Array,
  uint8: Uint8Array,
  int16: Int16Array,
  uint16: Uint16Array,
  int32: Int32Array,
  uint32: Uint32Array,
  int64: BigInt64Array,
  uint64: BigUint64Array,
  bool: Uint8Array,
};

// Markers written to the process' stderr (fd 2), which also receives
// onnxruntime's own log; the driver splits the captured file on them.
function logMarker(text) {
  try { fs.writeSync(2, '\n@@onnx-dml-bench ' + text + '@@\n'); } catch (_) { /* ignore */ }
}

// The progress file is opened once per batch and written line by line (each open of a file costs
// milliseconds under Wine); a write is a system call, so a line written survives a crash.
function makeProgress(progressPath) {
  let fd = null;
  const progress = (index, stage) => {
    if (!progressPath) return;
    try {
      if (fd === null) fd = fs.openSync(winPath(progressPath), 'a');
      fs.writeSync(fd, JSON.stringify({ index, stage, t_ms: nowMs() }) + '\n');
    } catch (_) { /* ignore */ }
  };
  progress.close = () => {
    if (fd !== null) {
      try { fs.closeSync(fd); } catch (_) { /* ignore */ }
      fd = null;
    }
  };
  return progress;
}

// The bytes a job gives as {"offset", "length"} into the batch's blob.
function blobSlice(blob, ref, what) {
  if (!blob) throw new Error(`${what}: given by offset but the batch has no blob`);
  const off = Number(ref.offset);
  const len = Number(ref.length);
  if (!(off >= 0 && len >= 0 && off + len <= blob.length)) {
    throw new Error(`${what}: bytes ${off}..${off + len} outside the blob of ${blob.length} bytes`);
  }
  return blob.subarray(off, off + len);
}

function readTensor(ort, spec, blob) {
  const Ctor = ARRAY_TYPES[spec.dtype];
  if (!Ctor) throw new Error(`input ${spec.name}: unsupported dtype ${spec.dtype}`);
  const dims = (spec.dims || []).map(Number);
  const count = dims.reduce((a, b) => a * b, 1);
  const buf = spec.file !== undefined ? fs.readFileSync(winPath(spec.file))
    : blobSlice(blob, spec, `input ${spec.name}`);
  const expected = count * Ctor.BYTES_PER_ELEMENT;
  if (buf.length !== expected) {
    throw new Error(`input ${spec.name}: ${buf.length} bytes given, ` +
      `expected ${expected} for ${spec.dtype}[${dims.join(',')}]`);
  }
  // Copy into a fresh, aligned ArrayBuffer (Buffers may be pooled/unaligned).
  const ab = new ArrayBuffer(expected);
  new Uint8Array(ab).set(buf);
  return new ort.Tensor(spec.dtype, new Ctor(ab), dims);
}

function tensorBytes(t) {
  const d = t.data;
  if (d === undefined || d === null || d.buffer === undefined) {
    throw new Error(`output of type ${t.type} has no raw buffer`);
  }
  return Buffer.from(d.buffer, d.byteOffset, d.byteLength);
}

function sessionOptions(job) {
  const ep = job.ep || 'dml';
  const o = {
    graphOptimizationLevel: job.graph_optimization_level || 'disabled',
    logSeverityLevel: job.verbose ? 0 : (job.log_severity_level !== undefined ? job.log_severity_level : 3),
    logVerbosityLevel: 0,
    extra: { session: {} },
  };
  if (ep === 'dml') {
    o.executionProviders = job.device_id !== undefined && job.device_id !== null
      ? [{ name: 'dml', deviceId: job.device_id }] : ['dml'];
    o.enableMemPattern = false;
    o.executionMode = 'sequential';
  } else if (ep === 'cpu') {
    o.executionProviders = ['cpu'];
  } else {
    throw new Error(`unknown ep ${ep}`);
  }
  if (job.disable_cpu_ep_fallback) o.extra.session.disable_cpu_ep_fallback = '1';
  if (job.session_config) {
    for (const [k, v] of Object.entries(job.session_config)) o.extra.session[k] = String(v);
  }
  return o;
}

async function runJob(ort, job, index, ctx) {
  const res = {
    index,
    id: job.id !== undefined ? job.id : null,
    ep: job.ep || 'dml',
    ok: false,
    stage: 'load',
    error: null,
    error_stack: null,
    outputs: [],
    timings_ms: {},
    versions: ctx.versions,
    log: ctx.log || null,
  };
  let session = null;
  logMarker(`begin ${index}`);
  try {
    ctx.progress(index, 'load');
    const feeds = {};
    for (const spec of job.inputs || []) feeds[spec.name] = readTensor(ort, spec, ctx.blob);
    const model = typeof job.model === 'string' ? winPath(job.model) : blobSlice(ctx.blob, job.model, 'model');

    ctx.progress(index, 'session');
    res.stage = 'session';
    // Test hook: simulate a native crash of the process during a job.
    if (job.debug_abort) process.abort();
    const t0 = nowMs();
    res.timings_ms.session_start = t0;
    session = await ort.InferenceSession.create(model, sessionOptions(job));
    res.timings_ms.session = nowMs() - t0;
    delete res.timings_ms.session_start;
    res.input_names = session.inputNames;
    res.output_names = session.outputNames;

    ctx.progress(index, 'run');
    res.stage = 'run';
    const fetches = (job.outputs && job.outputs.length) ? job.outputs : session.outputNames;
    const repeat = Math.max(1, Number(job.repeat || 1));
    const warmup = Math.max(0, Number(job.warmup || 0));
    const runs = [];
    let out = null;
    // keep_runs: the outputs of runs 2..N too (each written as soon as it ran, a file per output:
    // beside out_dir's files, or beside out_file), and a run that raises is that run's answer
    // ({error}), not the job's
    const writeOutputs = (result, suffix) => fetches.map((name, k) => {
      const t = result[name];
      if (t === undefined) throw new Error(`output ${name} missing from run result`);
      const file = job.out_dir ? joinPath(job.out_dir, `${index}_${k}${suffix}.bin`) : `${job.out_file}${suffix}_${k}.bin`;
      fs.writeFileSync(winPath(file), tensorBytes(t));
      return { name, dtype: t.type, dims: Array.from(t.dims, Number), file };
    });
    if (job.keep_runs) res.runs = [];
    for (let k = 0; k < warmup; k++) out = await session.run(feeds, fetches);
    for (let k = 0; k < repeat; k++) {
      const t1 = nowMs();
      if (job.keep_runs && k > 0) {
        try {
          const again = await session.run(feeds, fetches);
          res.runs.push(writeOutputs(again, `_r${k}`));
        } catch (e) {
          res.runs.push({ error: errorText(e) });
        }
      } else {
        out = await session.run(feeds, fetches);
      }
      runs.push(nowMs() - t1);
    }
    res.timings_ms.run = runs[0];
    if (repeat > 1) {
      res.timings_ms.runs = runs;
      res.timings_ms.run_min = Math.min(...runs);
    }

    ctx.progress(index, 'write');
    res.stage = 'write';      // the bench's own step: a failure here is not the EP's
    const parts = [];
    let offset = 0;
    fetches.forEach((name, k) => {
      const t = out[name];
      if (t === undefined) throw new Error(`output ${name} missing from run result`);
      const bytes = tensorBytes(t);
      const desc = { name, dtype: t.type, dims: Array.from(t.dims, Number) };
      if (job.out_file) {
        const pad = (8 - (offset % 8)) % 8;
        if (pad) parts.push(Buffer.alloc(pad));
        offset += pad;
        Object.assign(desc, { file: job.out_file, offset, length: bytes.length });
        parts.push(bytes);
        offset += bytes.length;
      } else {
        desc.file = joinPath(job.out_dir, `${index}_${k}.bin`);
        fs.writeFileSync(winPath(desc.file), bytes);
      }
      res.outputs.push(desc);
    });
    if (job.out_file) fs.writeFileSync(winPath(job.out_file), Buffer.concat(parts));
    res.stage = 'done';
    res.ok = true;
  } catch (e) {
    if (res.timings_ms.session_start !== undefined) {   // a session refused: how long it took
      res.timings_ms.session_failed = nowMs() - res.timings_ms.session_start;
      delete res.timings_ms.session_start;
    }
    res.error = errorText(e);
    res.error_stack = errorStack(e);
    res.outputs = [];
  } finally {
    if (session) {
      try { await session.release(); } catch (_) { /* ignore */ }
    }
  }
  logMarker(`end ${index}`);
  ctx.progress(index, 'finished');
  if (job.result) writeAtomic(job.result, JSON.stringify(res));
  return res;
}

// Serve mode: node.exe worker.js --serve DIR
// Runs batch files DIR/req-1.json, DIR/req-2.json, ... (each a JOB.json batch as above) in turn,
// writing DIR/done-N.json after batch N; ends when DIR/quit appears or a batch names another
// onnxruntime-node folder than the first.  One Windows process (and one loaded onnxruntime.dll)
// for many batches: starting node.exe under Wine costs about half a second.
let served = null;   // {ortDir, ort, versions}

function sleep(ms) { return new Promise((r) => setTimeout(r, ms)); }

async function serve(dir) {
  for (let n = 1; ; n++) {
    const req = joinPath(dir, `req-${n}.json`);
    let delay = 1;
    while (!fs.existsSync(winPath(req))) {
      if (fs.existsSync(winPath(joinPath(dir, 'quit')))) process.exit(0);
      if (!fs.existsSync(winPath(dir))) process.exit(0);     // the driver is gone and its folder too
      await sleep(delay);
      delay = Math.min(20, delay * 2);
    }
    let spec;
    try {
      spec = JSON.parse(fs.readFileSync(winPath(req), 'utf8'));
    } catch (e) {
      try { fs.writeSync(2, `cannot read job file ${req}: ${errorText(e)}\n`); } catch (_) { /* ignore */ }
      process.exit(3);
    }
    if (served && (spec.ort_dir || null) !== served.ortDir) process.exit(6);
    await runBatch(spec);
    writeAtomic(joinPath(dir, `done-${n}.json`), JSON.stringify({ n }));
  }
}

async function main() {
  const jobArg = process.argv[2];
  if (!jobArg) {
    fs.writeSync(2, 'usage: node worker.js JOB.json | --serve DIR\n');
    process.exit(2);
  }
  if (jobArg === '--serve') {
    await serve(process.argv[3]);
    return;
  }
  let spec;
  try {
    spec = JSON.parse(fs.readFileSync(winPath(jobArg), 'utf8'));
  } catch (e) {
    try { fs.writeSync(2, `cannot read job file ${jobArg}: ${errorText(e)}\n`); } catch (_) { /* ignore */ }
    process.exit(3);
  }
  await runBatch(spec);
  process.exit(0);
}

async function runBatch(spec) {
  const batch = Array.isArray(spec.jobs);
  const jobs = batch ? spec.jobs : [spec];
  const ctx = { progress: makeProgress(spec.progress), log: spec.log || null, versions: {}, blob: null };
  if (spec.blob) {
    try {
      ctx.blob = fs.readFileSync(winPath(spec.blob));
    } catch (e) {
      try { fs.writeSync(2, `cannot read the batch's blob ${spec.blob}: ${errorText(e)}\n`); } catch (_) { /* ignore */ }
      process.exit(3);
    }
  }
  const writeStatus = (obj) => {
    if (spec.status) {
      try { writeAtomic(spec.status, JSON.stringify(obj)); } catch (_) { /* ignore */ }
    }
  };

  let ort;
  try {
    if (served) {
      ort = served.ort;
      ctx.versions = served.versions;
    } else {
      ort = require(spec.ort_dir ? winPath(spec.ort_dir) : 'onnxruntime-node');
      ctx.versions = Object.assign({}, ort.env.versions || {});
      ctx.versions.nodejs = process.versions.node;
      try {
        ctx.versions.backends = ort.listSupportedBackends
          ? ort.listSupportedBackends().map((b) => b.name) : undefined;
      } catch (_) { /* ignore */ }
      served = { ortDir: spec.ort_dir || null, ort, versions: ctx.versions };
    }
  } catch (e) {
    // Report the failure for every job so the driver sees the reason.
    jobs.forEach((job, index) => {
      const res = {
        index, id: job.id !== undefined ? job.id : null, ep: job.ep || 'dml', ok: false,
        stage: 'init', error: 'cannot load onnxruntime-node: ' + errorText(e),
        error_stack: errorStack(e), outputs: [], timings_ms: {}, versions: {}, log: ctx.log,
      };
      if (job.result) {
        try { writeAtomic(job.result, JSON.stringify(res)); } catch (_) { /* ignore */ }
      }
    });
    writeStatus({ ok: false, error: errorText(e), versions: {} });
    process.exit(4);
  }
  writeStatus({ ok: true, state: 'running', versions: ctx.versions, count: jobs.length });

  let done = 0;
  for (let i = 0; i < jobs.length; i++) {
    await runJob(ort, jobs[i], i, ctx);
    done++;
  }
  writeStatus({ ok: true, state: 'finished', versions: ctx.versions, count: jobs.length, done });
  ctx.progress.close();
}

process.on('uncaughtException', (e) => {
  try { fs.writeSync(2, 'uncaught exception: ' + (errorStack(e) || errorText(e)) + '\n'); } catch (_) { /* ignore */ }
  process.exit(5);
});
process.on('unhandledRejection', (e) => {
  try { fs.writeSync(2, 'unhandled rejection: ' + (errorStack(e) || errorText(e)) + '\n'); } catch (_) { /* ignore */ }
  process.exit(5);
});

main();
