// Runs a model on ONNX Runtime's CPU provider with its profiler on: one
// warm-up, then N runs; prints the path of the profile (Chrome trace JSON,
// one "Node" event per kernel run, named "<node>_kernel_time", with the op
// in args.op_name). bench/dnnl_vs_ort_ops.py reads it.
//
// usage: node ort_profile.js MODEL.onnx INPUT.npy PREFIX --repeat N --threads T
const path = require("path");
const { ort, readNpy, sessionOptions } = require(path.join(__dirname, "ort", "common.js"));

async function main() {
  const args = process.argv.slice(2);
  if (args.length < 3) throw new Error("usage: node ort_profile.js MODEL.onnx INPUT.npy PREFIX [--repeat N] [--threads T]");
  const [model, input, prefix] = args;
  const opt = (name, def) => (args.indexOf(name) >= 0 ? args[args.indexOf(name) + 1] : def);
  const repeat = Number(opt("--repeat", "20")), threads = Number(opt("--threads", "2"));
  const session = await ort.InferenceSession.create(model, sessionOptions(threads, {
    enableProfiling: true, profileFilePrefix: prefix,
  }));
  const feeds = { [session.inputNames[0]]: readNpy(input) };
  await session.run(feeds);
  for (let i = 0; i < repeat; i++) await session.run(feeds);
  const file = session.endProfiling ? session.endProfiling() : null;
  console.log(`profile ${file || ""}`);
}

main().catch((e) => {
  console.error("ort_profile: " + e.message);
  process.exit(1);
});
