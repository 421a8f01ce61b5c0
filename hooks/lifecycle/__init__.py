"""The runner lifecycle, shared by the Runner controller, the RunnerSet controller and the
runner-pod decorator: when a runner pod is kept, replaced or stopped, and what GitHub must
hear first.

Sans-I/O, in the style of h11: every decision here is a pure function of facts (the pod as
observed, the recorded stop, the registration material, now) and of the answers GitHub gave so
far (`steps.Answers`). A decision that needs an answer it does not have stops with the question
(`steps.NeedAnswer`); `steps.resolve` asks GitHub through the port and runs the decision again
(questions certain in advance are asked before it runs; those of independent parts together).
The controllers read their request into facts, resolve their decision, and answer from it.

Invariants every decision keeps:

- No runner pod is let go before GitHub has let its runner go, or the runner has provably
  stopped (its container exited, the pod never started, it never registered within the
  registration timeout); a busy runner is waited for as long as it works.
- No registration outlives its object: before a replacement pod starts under the same name,
  and before a Runner or RunnerSet is finalized, whatever registration the stopped runner left
  is removed.
- A runner id recorded for an earlier pod is never used to decide about the current one.
"""
