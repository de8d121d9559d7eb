//! tollgate-governance: pricing and cost, budget windows, token counting for admission,
//! the admission engine (budgets, RPM/TPM/parallel limits) and the governance store.

pub mod admission;
pub mod duration;
pub mod pricing;
pub mod store;
pub mod tokens;

#[cfg(test)]
pub(crate) mod test_support;
