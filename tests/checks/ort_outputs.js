// Runs a model once on ONNX Runtime's CPU provider and writes every output
// as OUTDIR/<name>.npy (names as seam run --output-dir writes them), for
// the checkers that compare seam against ONNX Runtime (check_quant.py).
//
// usage: node ort_outputs.js ORT_DIR MODEL.onnx OUTDIR [--input NAME=FILE.npy]...
//            [--opt all|basic|disabled] [--threads N] [--meta FILE.json]
//
// --meta writes the session's inputs and outputs as ONNX Runtime sees them:
// {"inputs": [{"name", "type", "shape"}], "outputs": [...]}.
//
// ORT_DIR is the folder whose node_modules holds onnxruntime-node
// (bench/ort after `npm install --ignore-scripts` there). Inputs are
// float32, int64, int32, uint8 or int8 .npy files (version 1 header,
// little-endian, C order).
const fs = require("fs");
const path = require("path");

const DTYPES = {
  "<f4": ["float32", Float32Array], "<i8": ["int64", BigInt64Array], "<i4": ["int32", Int32Array],
  "|u1": ["uint8", Uint8Array], "|i1": ["int8", Int8Array], "|b1": ["bool", Uint8Array],
};

function readNpy(ort, file) {
  const buf = fs.readFileSync(file);
  const hlen = buf.readUInt16LE(8);
  const header = buf.toString("latin1", 10, 10 + hlen);
  const descr = /'descr':\s*'([^']+)'/.exec(header)[1];
  if (/'fortran_order':\s*True/.test(header)) throw new Error(file + ": Fortran order");
  const shape = /'shape':\s*\(([^)]*)\)/.exec(header)[1].split(",").map((s) => s.trim()).filter((s) => s).map(Number);
  const dt = DTYPES[descr];
  if (!dt) throw new Error(file + ": unsupported npy dtype " + descr);
  const bytes = new Uint8Array(buf.subarray(10 + hlen)).buffer;
  return new ort.Tensor(dt[0], new dt[1](bytes), shape);
}

function writeNpy(file, tensor) {
  const descr = Object.keys(DTYPES).find((k) => DTYPES[k][0] === tensor.type);
  if (!descr) throw new Error("output of type " + tensor.type + " cannot be written");
  const shape = tensor.dims.length === 1 ? `(${tensor.dims[0]},)` : `(${tensor.dims.join(", ")})`;
  let header = `{'descr': '${descr}', 'fortran_order': False, 'shape': ${shape}, }`;
  while ((10 + header.length + 1) % 64) header += " ";
  header += "\n";
  const pre = Buffer.alloc(10);
  pre.write("\x93NUMPY", 0, "latin1");
  pre[6] = 1;
  pre[7] = 0;
  pre.writeUInt16LE(header.length, 8);
  const data = Buffer.from(tensor.data.buffer, tensor.data.byteOffset, tensor.data.byteLength);
  fs.writeFileSync(file, Buffer.concat([pre, Buffer.from(header, "latin1"), data]));
}

function fileName(name) {
  const s = name.replace(/[^A-Za-z0-9._-]/g, "_");
  return (s === "" || s === "." || s === ".." ? "output" : s) + ".npy";
}

async function main() {
  const args = process.argv.slice(2);
  const [ortDir, model, outDir] = args;
  const ort = require(path.resolve(ortDir, "node_modules", "onnxruntime-node"));
  const feeds = {};
  let opt = "all", threads = 2, meta = null;
  for (let i = 3; i < args.length; i += 2) {
    if (args[i] === "--input") {
      const eq = args[i + 1].indexOf("=");
      feeds[args[i + 1].slice(0, eq)] = readNpy(ort, args[i + 1].slice(eq + 1));
    } else if (args[i] === "--opt") opt = args[i + 1];
    else if (args[i] === "--threads") threads = Number(args[i + 1]);
    else if (args[i] === "--meta") meta = args[i + 1];
    else throw new Error("unknown argument " + args[i]);
  }
  const session = await ort.InferenceSession.create(model, {
    intraOpNumThreads: threads, interOpNumThreads: 1, executionMode: "sequential", graphOptimizationLevel: opt,
    logSeverityLevel: 3,
  });
  if (meta) {
    const list = (m) => m.map((v) => ({ name: v.name, type: v.isTensor ? v.type : "non-tensor", shape: v.shape || [] }));
    fs.writeFileSync(meta, JSON.stringify({ inputs: list(session.inputMetadata), outputs: list(session.outputMetadata) }));
  }
  const out = await session.run(feeds);
  fs.mkdirSync(outDir, { recursive: true });
  for (const name of session.outputNames) writeNpy(path.join(outDir, fileName(name)), out[name]);
}

main().catch((e) => {
  console.error("ort_outputs: " + e.message);
  process.exit(1);
});
