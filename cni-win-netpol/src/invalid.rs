//! What is wrong with an API object, and where.

/// A field of an API object that does not make sense, or that HNS cannot enforce.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{field}: {problem}")]
pub struct Invalid {
    /// The field's path in the object, as `kubectl explain` spells it (`spec.ingress[0].ports[1].endPort`).
    pub field: String,
    /// What is wrong with it, and what would be right.
    pub problem: String,
}

impl Invalid {
    /// An invalid `field`.
    pub fn new(field: impl Into<String>, problem: impl Into<String>) -> Invalid {
        Invalid {
            field: field.into(),
            problem: problem.into(),
        }
    }
}
