// Times many small models on ONNX Runtime's CPU provider in ONE node process
// (bench/op_bench.py's peer), so that node's start-up and loading
// onnxruntime-node are paid once, not per model.
//
// usage: node ort_ops.js [--threads T]
// Reads one JSON job per line on stdin:
//   {"model": "M.onnx", "inputs": {"NAME": "FILE.npy", ...}, "repeat": N}
// and answers each with one JSON line on stdout:
//   {"median_ms": X, "min_ms": Y, "runs": N, "create_ms": Z} or {"error": "..."}
// Each job: create the session (2 intra-op threads, all optimizations, the
// options of bench/ort/common.js), one warm-up run, N timed runs.
const fs = require("fs");
const readline = require("readline");
const { ort, sessionOptions } = require("./common.js");

// .npy (version 1/2 header, little-endian, C order) -> ort.Tensor, more
// dtypes than common.js's readNpy (the single-node cases feed int32, bool,
// uint8, float64 ...).
const NPY = {
  "<f4": ["float32", Float32Array], "<f8": ["float64", Float64Array], "<i8": ["int64", BigInt64Array],
  "<i4": ["int32", Int32Array], "<i2": ["int16", Int16Array], "|i1": ["int8", Int8Array],
  "|u1": ["uint8", Uint8Array], "<u2": ["uint16", Uint16Array], "<u4": ["uint32", Uint32Array],
  "<u8": ["uint64", BigUint64Array], "|b1": ["bool", Uint8Array], "<f2": ["float16", Uint16Array],
};
function readNpy(file) {
  const buf = fs.readFileSync(file);
  const major = buf[6];
  const hlen = major === 1 ? buf.readUInt16LE(8) : buf.readUInt32LE(8);
  const start = (major === 1 ? 10 : 12) + hlen;
  const header = buf.toString("latin1", major === 1 ? 10 : 12, start);
  const descr = /'descr':\s*'([^']+)'/.exec(header)[1];
  const shape = /'shape':\s*\(([^)]*)\)/.exec(header)[1].split(",").map((s) => s.trim()).filter((s) => s).map(Number);
  const t = NPY[descr];
  if (!t) throw new Error("unsupported npy dtype " + descr);
  const copy = new Uint8Array(buf.subarray(start)).buffer;
  return new ort.Tensor(t[0], new t[1](copy), shape);
}

async function job(j, threads) {
  const t_create = process.hrtime.bigint();
  const session = await ort.InferenceSession.create(j.model, sessionOptions(threads));
  const create = Number(process.hrtime.bigint() - t_create) / 1e6;
  const feeds = {};
  for (const [name, file] of Object.entries(j.inputs || {})) feeds[name] = readNpy(file);
  await session.run(feeds); // warm-up
  const repeat = j.repeat || 10;
  const times = [];
  for (let i = 0; i < repeat; i++) {
    const t0 = process.hrtime.bigint();
    await session.run(feeds);
    times.push(Number(process.hrtime.bigint() - t0) / 1e6);
  }
  if (session.release) await session.release();
  times.sort((a, b) => a - b);
  return { median_ms: times[Math.floor(times.length / 2)], min_ms: times[0], runs: repeat, create_ms: create };
}

async function main() {
  const args = process.argv.slice(2);
  const ti = args.indexOf("--threads");
  const threads = ti >= 0 ? Number(args[ti + 1]) : 2;
  const rl = readline.createInterface({ input: process.stdin, terminal: false });
  for await (const line of rl) {
    if (!line.trim()) continue;
    let res;
    try {
      res = await job(JSON.parse(line), threads);
    } catch (e) {
      res = { error: String(e.message || e).split("\n")[0].slice(0, 300) };
    }
    process.stdout.write(JSON.stringify(res) + "\n");
  }
}

main();
