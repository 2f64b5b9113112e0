package io.kdapack.data.synthetic;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

class AssociativeRecallTest {
    private final AssociativeRecall task = new AssociativeRecall(16, 16, 2, 8);

    @Test
    void everyQueryIsAnsweredByTheBindingOfItsOwnDocument() {
        for (int[] doc : task.documents(42, 200)) {
            int query = indexOf(doc, task.queryId());
            int pairs = query / 2;
            assertEquals(4 * pairs + 2, doc.length);
            assertEquals(task.eodId(), doc[doc.length - 1]);
            Map<Integer, Integer> binding = new HashMap<>();
            for (int i = 0; i < pairs; i++) {
                assertTrue(doc[2 * i] < 16 && doc[2 * i + 1] >= 16 && doc[2 * i + 1] < 32);
                assertEquals(null, binding.put(doc[2 * i], doc[2 * i + 1]), "keys of a document are distinct");
            }
            for (int i = query + 1; i < doc.length - 1; i += 2) {
                assertEquals(binding.get(doc[i]), doc[i + 1]);
            }
        }
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
        int[] row = {3, 20, 5, 21, q, 5, 21, 3, 20, eod, 1, 17, q, 1, 17, eod, task.padId()};
        boolean[] expected = new boolean[row.length];
        expected[6] = expected[8] = expected[14] = true;
        assertArrayEquals(expected, task.answerPositions(row));
    }

    @Test
    void rejectsImpossibleShapes() {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> new AssociativeRecall(4, 8, 2, 8));
        assertEquals("keys must be >= maxPairs (8), got 4", e.getMessage());
        assertThrows(IllegalArgumentException.class, () -> new AssociativeRecall(8, 8, 0, 2));
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
