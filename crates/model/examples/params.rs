//! Prints the parameter table (the one in `docs/model.md`) as Markdown, or as JSON with
//! `--json`.
//!
//! ```text
//! cargo run --release -p morph-model --example params
//! ```

use morph_model::CostModel;

fn main() {
    let model = CostModel::tm5600();
    if std::env::args().any(|a| a == "--json") {
        println!("{}", serde_json::to_string_pretty(&model.params()).unwrap());
    } else {
        print!("{}", model.params_markdown());
    }
}
