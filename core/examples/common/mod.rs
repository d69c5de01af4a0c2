//! What the chat benchmarks share: the same ~250-token question, so their figures compare.

/// A question of about 250 tokens (with the chat template) asking for a long answer.
pub fn question() -> String {
    let context =
        "The Loire is the longest river in France. It flows through Orléans, Tours and Nantes. \
        Its valley is known for its castles, vineyards and gardens. "
            .repeat(6);
    format!("{context}\nWrite a long, detailed essay about the Loire valley and its history.")
}
