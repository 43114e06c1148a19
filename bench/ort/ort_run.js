// Runs a model on ONNX Runtime's CPU provider, the way `seam run --repeat N`
// does: one warm-up, then N timed runs; prints "median X ms (min Y ms)", the
// time it took to create the session, and the process's peak RSS. Optionally writes output 0 as raw float32 for
// comparison, or every output as DIR/<output name>.npy.
//
// usage: node ort_run.js MODEL.onnx INPUT.npy --repeat N --threads T [--out FILE]
//            [--input NAME=FILE]... [--out-dir DIR]
// INPUT.npy feeds the model's first input; --input feeds the others by name.
const fs = require("fs");
const path = require("path");
const { ort, readNpy, writeNpy, sessionOptions } = require("./common.js");

async function main() {
  const args = process.argv.slice(2);
  const model = args[0], input = args[1];
  const opt = (name, def) => (args.indexOf(name) >= 0 ? args[args.indexOf(name) + 1] : def);
  const repeat = Number(opt("--repeat", "20")), threads = Number(opt("--threads", "2"));
  const t_create = process.hrtime.bigint();
  const session = await ort.InferenceSession.create(model, sessionOptions(threads));
  const ready = Number(process.hrtime.bigint() - t_create) / 1e6;
  const feeds = { [session.inputNames[0]]: readNpy(input) };
  args.forEach((a, i) => {
    if (a !== "--input") return;
    const eq = args[i + 1].indexOf("=");
    feeds[args[i + 1].slice(0, eq)] = readNpy(args[i + 1].slice(eq + 1));
  });
  let out = await session.run(feeds); // warm-up
  const times = [];
  for (let i = 0; i < repeat; i++) {
    const t0 = process.hrtime.bigint();
    out = await session.run(feeds);
    times.push(Number(process.hrtime.bigint() - t0) / 1e6);
  }
  times.sort((a, b) => a - b);
  const median = times[Math.floor(times.length / 2)];
  console.log(`median ${median.toFixed(3)} ms (min ${times[0].toFixed(3)} ms, ${repeat} runs)`);
  console.log(`session ready in ${ready.toFixed(1)} ms`);
  console.log(`peak rss ${(process.resourceUsage().maxRSS / 1024).toFixed(1)} MB`);
  const file = opt("--out", null);
  if (file) fs.writeFileSync(file, Buffer.from(out[session.outputNames[0]].data.buffer));
  const dir = opt("--out-dir", null);
  if (dir) {
    fs.mkdirSync(dir, { recursive: true });
    for (const name of session.outputNames)
      writeNpy(path.join(dir, name.replace(/[^A-Za-z0-9._-]/g, "_") + ".npy"), out[name]);
  }
}

main().catch((e) => {
  console.error("ort_run: " + e.message);
  process.exit(1);
});
