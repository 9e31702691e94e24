// autograd/tape.hpp — the tape in one include: its nodes (autograd/node.hpp), recording them
// (autograd/record.hpp: grad mode, RecordInfo, Saved, record) and the engine that walks them
// backwards (autograd/engine.hpp: backward, tg::grad, callbacks). Holds no declarations itself.
#pragma once

#include "autograd/engine.hpp"
#include "autograd/node.hpp"
#include "autograd/record.hpp"
