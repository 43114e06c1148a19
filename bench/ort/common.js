// What bench/ort/ort_run.js and bench/ort_profile.js share: an .npy input
// as an ONNX Runtime tensor, and the session options both run with (the
// profile must time the same configuration as the benchmark).
const fs = require("fs");
const ort = require("onnxruntime-node");

// float32 and int64 .npy files (version 1 header, little-endian, C order).
function readNpy(file) {
  const buf = fs.readFileSync(file);
  const hlen = buf.readUInt16LE(8);
  const header = buf.toString("latin1", 10, 10 + hlen);
  const descr = /'descr':\s*'([^']+)'/.exec(header)[1];
  const shape = /'shape':\s*\(([^)]*)\)/.exec(header)[1].split(",").map((s) => s.trim()).filter((s) => s).map(Number);
  const copy = new Uint8Array(buf.subarray(10 + hlen)).buffer;
  if (descr === "<f4") return new ort.Tensor("float32", new Float32Array(copy), shape);
  if (descr === "<i8") return new ort.Tensor("int64", new BigInt64Array(copy), shape);
  throw new Error("unsupported npy dtype " + descr);
}

function sessionOptions(threads, extra) {
  return Object.assign({
    intraOpNumThreads: threads, interOpNumThreads: 1, executionMode: "sequential", graphOptimizationLevel: "all",
  }, extra || {});
}

module.exports = { ort, readNpy, sessionOptions };
