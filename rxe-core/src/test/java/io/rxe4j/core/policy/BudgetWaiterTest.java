package io.rxe4j.core.policy;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/** {@link BudgetWaiter.Place}: the states a waiter passes through, written by the budget alone. */
class BudgetWaiterTest {
    @Test
    void aNewPlaceIsNeitherQueuedNorHoldingATurn() {
        BudgetWaiter.Place p = new BudgetWaiter.Place();
        assertThat(p.queued()).isFalse();
        assertThat(p.holdsTurn()).isFalse();
    }

    @Test
    void queuedThenGrantedThenEnded() {
        BudgetWaiter.Place p = new BudgetWaiter.Place();
        p.enqueue();
        assertThat(p.queued()).isTrue();
        assertThat(p.holdsTurn()).isFalse();
        p.grantTurn();
        assertThat(p.queued()).isFalse();
        assertThat(p.holdsTurn()).isTrue();
        p.endTurn();
        assertThat(p.queued()).isFalse();
        assertThat(p.holdsTurn()).isFalse();
    }

    @Test
    void queueingAgainDropsATurnNotYetUsed() {
        BudgetWaiter.Place p = new BudgetWaiter.Place();
        p.grantTurn();
        p.enqueue();
        assertThat(p.holdsTurn()).isFalse();
        assertThat(p.queued()).isTrue();
    }

    @Test
    void theBudgetTellsTheWaiterOfEachTurnWithItsPlaceAlreadyUpdated() {
        List<String> log = new ArrayList<>();
        boolean[] turnSeen = new boolean[1];
        PeerBudgetTest.Waiter w = new PeerBudgetTest.Waiter("w", log) {
            @Override
            public void onBudgetTurn() {
                turnSeen[0] = budgetPlace().holdsTurn() && !budgetPlace().queued();
                super.onBudgetTurn();
            }
        };
        PeerBudget budget = new PeerBudget(1000, false);
        budget.take(1000, 0);
        budget.await(w);
        assertThat(w.turns).isZero();
        budget.release(1000, true, 0);
        assertThat(w.turns).isEqualTo(1);
        assertThat(turnSeen[0]).as("the waiter may send as soon as it is told").isTrue();
        budget.take(10, 0);
        budget.release(10, true, 0);
        assertThat(w.turns).as("no turn without waiting").isEqualTo(1);
    }
}
