// Runs gpu_poor's memory calculation (src/App.js of RahulSChand/gpu_poor @ ad2fc0e) under node.
// The code is NOT transcribed: this script reads App.js, takes the verbatim text from `const billion`
// up to (not including) `function getGPUDataFromJSON` (all pure calculation helpers + getAllComputedData),
// and evaluates it unchanged. The React component App(), imports and JSX are not used.
// Stubs: `window` (only used to pick configPath, irrelevant), setErrorMessage/openModal (print the error),
// console.log silenced during the calls (the code logs debug output). handleClick()'s glue is mirrored below:
// contextLen = promptLen + tokensToGenerate, GPUs needed = ceil(Total / (1024 * gpu memory GB)).
const fs = require("fs");
const vm = require("vm");
const ROOT = "/tmp/peers/gpu_poor";
const src = fs.readFileSync(ROOT + "/src/App.js", "utf8");
const start = src.indexOf("const billion");
const end = src.indexOf("function getGPUDataFromJSON");
const calc = src.slice(start, end);
fs.writeFileSync("/tmp/peers/out/gpu_poor_extracted_calc.js", calc);   // exactly what is evaluated
const gpuJSONData = JSON.parse(fs.readFileSync(ROOT + "/src/gpu_config.json", "utf8"));
const ctx = { window: { location: { hostname: "localhost" } }, console: { log: () => {} }, Math, Number, Object, JSON, parseFloat, parseInt, isNaN, Error };
vm.createContext(ctx);
vm.runInContext(calc + "\nthis.getAllComputedData = getAllComputedData;", ctx);

// Llama-3-8B config.json, supplied the way the UI's "upload config" path does (jsonUploadedData).
const cfg = JSON.parse(fs.readFileSync("/work/main/examples/hf/Meta-Llama-3-8B/config.json", "utf8"));

function run(label, { trnType, typeOfTrn = "full_trn", opt = "adam_opt", quant = "no_quant", promptLen, tokensToGen, batchSize, gradCkpt = "no", gpu }) {
  const selections = { dropdownTrnOrNot: trnType, dropdownFullOrNot: typeOfTrn, dropdownOpt: opt, dropdownQuant: quant,
                       dropdownGPU: gpu, dropdownCPU: "3600x", dropdownDDR: "ddr4", isGPUorCPU: "usingGPU", isGradCheckPoint: gradCkpt };
  let err = null;
  const out = ctx.getAllComputedData(null, cfg, "", parseInt(promptLen) + parseInt(tokensToGen), 2, selections,
                                     (m) => { err = m; }, () => {}, batchSize, selections.isGradCheckPoint);
  if (out == null) { console.log(label, "ERROR:", err); return; }
  const need = Math.ceil(out["Total"] / (1024 * gpuJSONData[gpu]["memory"]));
  console.log(`${label}\n   inputs: ${JSON.stringify({ trnType, typeOfTrn, opt, quant, promptLen, tokensToGen, batchSize, gradCkpt, gpu })}`);
  console.log(`   output (MB as printed; computed as /1024/1024 so MiB): ${JSON.stringify(out)}  | GPUs needed: ${need}`);
  console.log(`   Total in GiB: ${(out["Total"] / 1024).toFixed(3)}`);
}

const trainA = { trnType: "trn", opt: "adam_opt", quant: "no_quant", promptLen: "2048", tokensToGen: "1", batchSize: "1", gpu: "rtx-4090" };
run("A  QLoRA, grad ckpt NO ", { ...trainA, typeOfTrn: "qlora", gradCkpt: "no" });
run("A  QLoRA, grad ckpt YES", { ...trainA, typeOfTrn: "qlora", gradCkpt: "yes" });
run("A' LoRA bf16, grad ckpt NO ", { ...trainA, typeOfTrn: "lora_trn", gradCkpt: "no" });
run("A' LoRA bf16, grad ckpt YES", { ...trainA, typeOfTrn: "lora_trn", gradCkpt: "yes" });
run("A  (check) QLoRA + quant=bnb_q4 (UI rejects)", { ...trainA, typeOfTrn: "qlora", quant: "bnb_q4" });
const infB = { typeOfTrn: "full_trn", quant: "no_quant", promptLen: "8192", tokensToGen: "1", gpu: "A100-80GB" };
for (const t of ["inf", "inf_vLLM"]) for (const bs of ["1", "8"])
  run(`B  ${t} bs=${bs} (single GPU, no TP)`, { ...infB, trnType: t, batchSize: bs });
