# tests/dist/examples/run_examples.cmake — the examples under mpirun -np 2 on the committed tiny
# samples: the classifier trains data-parallel and writes its metrics (rank 0 only), a run
# stopped by --max-steps and resumed ends with exactly the uninterrupted run's test loss and
# loss history, and the translator trains data-parallel.
# -DMPIRUN=... -DCLS=... -DTR=... -DFIX=<tests/fixtures/examples> -DWORK=<scratch folder>
file(REMOVE_RECURSE ${WORK})
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
