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

// An ONNX Runtime tensor as an .npy file (version 1 header, C order).
const NPY_DESCR = { float32: "<f4", float64: "<f8", int64: "<i8", int32: "<i4", int8: "|i1", uint8: "|u1", bool: "|b1" };
function writeNpy(file, t) {
  const descr = NPY_DESCR[t.type];
  if (!descr) throw new Error("cannot write a " + t.type + " tensor as .npy");
  const shape = t.dims.length === 1 ? `(${t.dims[0]},)` : `(${t.dims.join(", ")})`;
  let header = `{'descr': '${descr}', 'fortran_order': False, 'shape': ${shape}, }`;
  header += " ".repeat(63 - ((10 + header.length) % 64)) + "\n";
  const pre = Buffer.alloc(10);
  pre.write("\x93NUMPY", 0, "latin1");
  pre[6] = 1;
  pre[7] = 0;
  pre.writeUInt16LE(header.length, 8);
  const data = t.type === "bool" ? Buffer.from(Uint8Array.from(t.data, (v) => (v ? 1 : 0)))
    : Buffer.from(t.data.buffer, t.data.byteOffset, t.data.byteLength);
  fs.writeFileSync(file, Buffer.concat([pre, Buffer.from(header, "latin1"), data]));
}

function sessionOptions(threads, extra) {
  return Object.assign({
    intraOpNumThreads: threads, interOpNumThreads: 1, executionMode: "sequential", graphOptimizationLevel: "all",
  }, extra || {});
}

module.exports = { ort, readNpy, writeNpy, sessionOptions };
