"""sklearn-crfsuite's ``scorers`` module: ``make_scorer`` objects for ``GridSearchCV``.

``from crfkit.sklearn import scorers`` then ``scoring=scorers.flat_accuracy`` works as
with sklearn-crfsuite; :data:`chunk_f1` (conlleval's entity F1) is crfkit's addition.
"""

from crfkit.sklearn.metrics import chunk_f1, flat_accuracy, sequence_accuracy

__all__ = ["chunk_f1", "flat_accuracy", "sequence_accuracy"]
