# tests/dist/examples/run_examples.cmake — the examples under mpirun -np 2 on the committed tiny
# samples: the classifier trains data-parallel and writes its metrics (rank 0 only), a run
# stopped by --max-steps and resumed ends with exactly the uninterrupted run's test loss and
# loss history, and the translator trains data-parallel. Issue 23: ranks given different options
# are refused on every rank, naming each option with both values; the GPT trains data-parallel
# (rank 0 prints and writes) and a run stopped and resumed at 2 ranks ends with the uninterrupted
# run's losses; --predict under mpirun answers once.
# -DMPIRUN=... -DCLS=... -DTR=... [-DGPT=...] -DFIX=<tests/fixtures/examples> -DWORK=<scratch>
# (GPT defaults to the gpt program beside CLS.)
file(REMOVE_RECURSE ${WORK})
if(NOT GPT)
  get_filename_component(bin ${CLS} DIRECTORY)
  set(GPT ${bin}/gpt)
endif()
set(tiny --data-dir ${FIX}/text_classification/spam --quiet --epochs 4 --batch-size 4 --lr 3e-3
    --d-model 16 --layers 1 --heads 2 --ff 32 --max-len 48 --vocab-size 400 --seed 3
    --patience 0 --save-every 2 --dropout 0.1)
function(run what)
  execute_process(COMMAND ${MPIRUN} -np 2 ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out
                  ERROR_VARIABLE err TIMEOUT 240)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${what}: exit ${rc}\n${out}\n${err}")
  endif()
  set(last_out "${out}${err}" PARENT_SCOPE)
endfunction()
function(metric dir key var)
  file(READ ${dir}/metrics.json j)
  string(JSON v GET "${j}" ${key})
  set(${var} "${v}" PARENT_SCOPE)
endfunction()

run("classifier, 2 ranks" ${CLS} ${tiny} --out ${WORK}/full)
if(NOT EXISTS ${WORK}/full/metrics.json OR NOT EXISTS ${WORK}/full/best/model.safetensors)
  message(FATAL_ERROR "the 2-rank run wrote no metrics.json / best model")
endif()
metric(${WORK}/full test_loss full_loss)
metric(${WORK}/full history full_hist)
metric(${WORK}/full steps full_steps)
message("2 ranks: test loss ${full_loss} after ${full_steps} steps")

run("classifier, 2 ranks, stopped at step 5" ${CLS} ${tiny} --out ${WORK}/resumed --max-steps 5)
run("classifier, 2 ranks, resumed" ${CLS} ${tiny} --out ${WORK}/resumed --resume)
metric(${WORK}/resumed test_loss res_loss)
metric(${WORK}/resumed history res_hist)
if(NOT res_loss STREQUAL full_loss OR NOT res_hist STREQUAL full_hist)
  message(FATAL_ERROR "the resumed 2-rank run differs: test loss ${res_loss} vs ${full_loss}")
endif()
message("resumed at step 5: test loss ${res_loss} (identical history)")

run("translation, 2 ranks" ${TR}
    --steps 20 --train-size 200 --heldout-size 10 --valid-size 10 --d-model 16 --layers 1
    --heads 2 --ff 32 --batch-size 8 --eval-every 10 --warmup 2 --beam 2 --threads 1 --quiet
    --out ${WORK}/translation --metrics-out ${WORK}/translation/metrics.json)
if(NOT EXISTS ${WORK}/translation/metrics.json)
  message(FATAL_ERROR "the 2-rank translation run wrote no metrics\n${last_out}")
endif()
message("translation on 2 ranks: ok")

# Ranks with different options: refused on every rank, each difference named with both values.
execute_process(COMMAND ${MPIRUN} -np 1 ${CLS} ${tiny} --out ${WORK}/disagree --lr 3e-3
                        : -np 1 ${CLS} ${tiny} --out ${WORK}/disagree1 --lr 4e-3
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err TIMEOUT 120)
if(rc EQUAL 0 OR NOT "${out}${err}" MATCHES "different options"
   OR NOT "${out}${err}" MATCHES "--lr: rank 0 '3e-3', rank 1 '4e-3'"
   OR NOT "${out}${err}" MATCHES "--out: rank 0 '[^']*/disagree', rank 1 '[^']*/disagree1'")
  message(FATAL_ERROR "ranks with different --lr and --out were not refused (exit ${rc})\n${out}\n${err}")
endif()
if(EXISTS ${WORK}/disagree/metrics.json OR EXISTS ${WORK}/disagree/last)
  message(FATAL_ERROR "the refused run wrote a checkpoint or metrics")
endif()
execute_process(COMMAND ${MPIRUN} -np 1 ${TR} --steps 5 --batch-size 8 --out ${WORK}/tr_disagree
                        : -np 1 ${TR} --steps 5 --batch-size 16 --out ${WORK}/tr_disagree
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err TIMEOUT 120)
if(rc EQUAL 0 OR NOT "${out}${err}" MATCHES "--batch-size: rank 0 '8', rank 1 '16'")
  message(FATAL_ERROR "translation ranks with different --batch-size were not refused (exit ${rc})\n${out}\n${err}")
endif()
message("ranks with different options: refused, naming both values")

# --predict under mpirun: rank 0 answers, once.
run("classifier --predict, 2 ranks" ${CLS} --out ${WORK}/full --predict "win a free prize now")
string(REGEX MATCHALL "-> (ham|spam)" answers "${last_out}")
list(LENGTH answers n_answers)
if(NOT n_answers EQUAL 1)
  message(FATAL_ERROR "--predict under mpirun -np 2 printed ${n_answers} answers\n${last_out}")
endif()

# The GPT, data-parallel: rank 0 prints and writes; stopped at step 10 and resumed, it ends with
# exactly the uninterrupted run's losses.
set(gpt_tiny --data-dir ${FIX}/gpt/fortunes --block 32 --d-model 32 --layers 2 --heads 2
    --batch-size 4 --steps 20 --warmup 5 --lr 0.005 --eval-every 5 --eval-windows 8 --samples 1
    --length 20 --threads 1 --quiet)
run("gpt, 2 ranks" ${GPT} ${gpt_tiny} --out ${WORK}/gpt_full)
string(REGEX MATCHALL "held-out text" reports "${last_out}")
list(LENGTH reports n_reports)
if(NOT n_reports EQUAL 1)
  message(FATAL_ERROR "the 2-rank gpt run printed ${n_reports} reports (want rank 0's alone)\n${last_out}")
endif()
metric(${WORK}/gpt_full history gpt_hist)
metric(${WORK}/gpt_full heldout_nats_per_char gpt_held)
run("gpt, 2 ranks, stopped at step 10" ${GPT} ${gpt_tiny} --out ${WORK}/gpt_part --max-steps 10)
run("gpt, 2 ranks, resumed" ${GPT} ${gpt_tiny} --out ${WORK}/gpt_part --resume)
metric(${WORK}/gpt_part history gpt_res_hist)
metric(${WORK}/gpt_part heldout_nats_per_char gpt_res_held)
if(NOT gpt_res_hist STREQUAL gpt_hist OR NOT gpt_res_held STREQUAL gpt_held)
  message(FATAL_ERROR "the resumed 2-rank gpt run differs: held-out ${gpt_res_held} vs ${gpt_held}")
endif()
# --resume is exact at the same N only: one process refuses the 2-rank checkpoint.
execute_process(COMMAND ${GPT} ${gpt_tiny} --out ${WORK}/gpt_part --resume
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err TIMEOUT 120)
if(rc EQUAL 0 OR NOT "${out}${err}" MATCHES "world_size: checkpoint 2, now 1")
  message(FATAL_ERROR "a 2-rank gpt checkpoint resumed in one process (exit ${rc})\n${out}\n${err}")
endif()
# One process with the same seed draws other windows (the global batch is 2 x 4): a different run.
execute_process(COMMAND ${GPT} ${gpt_tiny} --out ${WORK}/gpt_one RESULT_VARIABLE rc
                OUTPUT_VARIABLE out ERROR_VARIABLE err TIMEOUT 240)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "gpt, 1 process: exit ${rc}\n${out}\n${err}")
endif()
metric(${WORK}/gpt_one history gpt_one_hist)
if(gpt_one_hist STREQUAL gpt_hist)
  message(FATAL_ERROR "the 2-rank gpt run trained exactly like one process: no data parallelism")
endif()
message("gpt on 2 ranks: held-out ${gpt_held} nats/char, resumed at step 10 identically")
