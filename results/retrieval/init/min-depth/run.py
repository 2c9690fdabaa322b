import sys, time
from headlab.retrieval.training import RetrievalTask, train_retrieval
L, D, steps, out = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
t = time.time()
task = RetrievalTask(D, "dense", n_distractors=1, min_depth=1)
r = train_retrieval(task, out, eval_every=250, progress=False, n_layers=L, d_model=128, steps=steps, init="fan-in",
                    untied=True, seed=0, checkpoint_every=500)
print(r["final_hops"], time.time() - t)
