// examples/finetune/data.hpp — the fine-tuning text as token ids: a text file (--data), or a
// folder of fortune files, by default Debian's fortunes (every item of every file, in file
// order), encoded with the model
// folder's tokenizer, an end-of-text token after each item when the tokenizer has one; the last
// tenth of the ids held out; training windows drawn from tg's generator (so a resumed run draws
// the same ones); fixed held-out windows.
//
// Not here: the model or the loss (train.cpp).
#pragma once

#include "autograd/tensor.hpp"
#include "nn/tokenizer/tokenizer.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace tgx::finetune {

struct Corpus {
  std::string source;  // the file or folder read
  int64_t items = 0, bytes = 0;
  std::vector<int64_t> train, heldout;
};

// data: a text file, a folder of fortune files, or "" for Debian's fortunes. Refuses (UserError) a
// corpus too short for one window of `block` + 1 tokens on each side.
Corpus load_corpus(const std::string& data, const tg::nn::Tokenizer& tok, int64_t block);

// B windows of block + 1 ids at random starts in ids: inputs (B, block), targets (B, block).
std::pair<tg::Tensor, tg::Tensor> random_batch(const std::vector<int64_t>& ids, int64_t B,
                                               int64_t block);
// Up to `count` non-overlapping windows from the start of ids, as (inputs, targets) batches of
// at most B windows.
std::vector<std::pair<tg::Tensor, tg::Tensor>> fixed_batches(const std::vector<int64_t>& ids,
                                                             int64_t count, int64_t B,
                                                             int64_t block);

}  // namespace tgx::finetune
