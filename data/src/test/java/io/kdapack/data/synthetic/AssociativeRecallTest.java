package io.kdapack.data.synthetic;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.Test;

class AssociativeRecallTest {
    private final AssociativeRecall task = new AssociativeRecall(16, 16, 2, 8);

    @Test
    void everyQueryIsAnsweredByItsOwnDocumentAndNoneAsksForThePreviousDocumentsKeys() {
        Set<Integer> previousKeys = Set.of();
        long noneQueries = 0;
        for (int[] doc : task.documents(42, 200)) {
            int query = indexOf(doc, task.queryId());
            int pairs = query / 2;
            assertEquals(task.eodId(), doc[doc.length - 1]);
            Map<Integer, Integer> binding = new HashMap<>();
            for (int i = 0; i < pairs; i++) {
                assertTrue(doc[2 * i] < 16 && doc[2 * i + 1] >= 16 && doc[2 * i + 1] < 32);
                assertEquals(null, binding.put(doc[2 * i], doc[2 * i + 1]), "keys of a document are distinct");
            }
            Set<Integer> asked = new HashSet<>();
            Set<Integer> askedNone = new HashSet<>();
            for (int i = query + 1; i < doc.length - 1; i += 2) {
                assertTrue(asked.add(doc[i]), "each key asked once");
                if (doc[i + 1] == task.noneId()) {
                    askedNone.add(doc[i]);
                } else {
                    assertEquals(binding.get(doc[i]), doc[i + 1]);
                }
            }
            Set<Integer> expectedNone = new HashSet<>(previousKeys);
            expectedNone.removeAll(binding.keySet());
            assertEquals(expectedNone, askedNone, "NONE for the previous document's keys this one did not bind");
            assertEquals(binding.keySet(), difference(asked, askedNone), "every bound key asked");
            assertEquals(2 * pairs + 1 + 2 * asked.size() + 1, doc.length);
            noneQueries += askedNone.size();
            previousKeys = binding.keySet();
        }
        assertTrue(noneQueries > 200, "about one NONE query per binding, got " + noneQueries);
    }

    @Test
    void isDeterministicInTheSeed() {
        List<int[]> a = task.documents(7, 50);
        List<int[]> b = task.documents(7, 50);
        for (int i = 0; i < a.size(); i++) {
            assertArrayEquals(a.get(i), b.get(i));
        }
    }

    @Test
    void marksExactlyTheAnswersOfPackedDocuments() {
        int q = task.queryId();
        int eod = task.eodId();
        int none = task.noneId();
        int[] row = {3, 20, 5, 21, q, 5, 21, 3, 20, eod, 1, 17, q, 3, none, 1, 17, eod, task.padId()};
        boolean[] expected = new boolean[row.length];
        expected[6] = expected[8] = expected[14] = expected[16] = true;
        assertArrayEquals(expected, task.answerPositions(row));
    }

    @Test
    void rejectsImpossibleShapes() {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> new AssociativeRecall(4, 8, 2, 8));
        assertEquals("keys must be >= maxPairs (8), got 4", e.getMessage());
        assertThrows(IllegalArgumentException.class, () -> new AssociativeRecall(8, 8, 0, 2));
    }

    private static Set<Integer> difference(Set<Integer> a, Set<Integer> b) {
        Set<Integer> out = new HashSet<>(a);
        out.removeAll(b);
        return out;
    }

    private static int indexOf(int[] doc, int token) {
        for (int i = 0; i < doc.length; i++) {
            if (doc[i] == token) {
                return i;
            }
        }
        throw new AssertionError("no token " + token);
    }
}
