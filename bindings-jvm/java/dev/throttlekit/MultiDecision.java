package dev.throttlekit;

import java.util.List;

/** A multi-dimensional decision: the binding dimension's decision and name, and every dimension's own decision in declaration order. */
public record MultiDecision(Decision decision, String binding, List<Decision> dimensions) {
    /** Whether the request is allowed. */
    public boolean allowed() {
        return decision.allowed();
    }
}
