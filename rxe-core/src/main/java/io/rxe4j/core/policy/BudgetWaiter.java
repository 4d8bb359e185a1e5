package io.rxe4j.core.policy;

import io.rxe4j.core.stats.Counters;

/**
 * The party that waits for a {@link PeerBudget}'s bytes: in the engine a QP's requester, in a test
 * anything. The budget knows its waiters only through this interface (it names no QP and no lane;
 * {@code redesign.md} §3, the {@code policy} floor).
 *
 * <p>The waiter's place in a budget (whether it is in the budget's FIFO, whether it holds a turn)
 * is a {@link Place} the waiter owns and the budget alone changes; the waiter reads it and ends its
 * own turn with {@link Place#endTurn()}. When the budget grants a turn it calls {@link
 * #onBudgetTurn()}, and the waiter arranges to run again (the engine puts the QP on its lane's
 * service queue). Loop only: a waiter and its budget run on the same event loop.
 */
public interface BudgetWaiter {
    /** @return this waiter's place in its budget: one object for the waiter's life, never null */
    Place budgetPlace();

    /**
     * The budget gave this waiter a turn (it left the FIFO, {@link Place#holdsTurn()} is true): run
     * again soon, after the waiters already scheduled. Called on the loop, from {@link
     * PeerBudget#release} or {@link PeerBudget#await}; must not call back into the budget.
     */
    void onBudgetTurn();

    /** @return the counters in which the budget counts this waiter's {@code budget_waits} */
    Counters counters();

    /**
     * A waiter's state in a {@link PeerBudget}: queued in its FIFO, and holding a turn. Written only
     * by the budget (and {@link #endTurn()} by the waiter); no allocation after construction.
     */
    final class Place {
        private boolean queued;
        private boolean turn;

        /** @return whether the waiter is in the budget's FIFO, waiting for a turn */
        public boolean queued() {
            return queued;
        }

        /** @return whether the waiter holds a turn: it may send ahead of the FIFO until it ends the turn */
        public boolean holdsTurn() {
            return turn;
        }

        /** The waiter's run is over: a turn lasts one run of the waiter. */
        public void endTurn() {
            turn = false;
        }

        /** The budget queued the waiter (it loses any turn it held). */
        void enqueue() {
            queued = true;
            turn = false;
        }

        /** The budget took the waiter off its FIFO and gave it a turn. */
        void grantTurn() {
            queued = false;
            turn = true;
        }

        @Override
        public String toString() {
            return (queued ? "queued" : "-") + (turn ? " turn" : "");
        }
    }
}
