//! `docs/model.md` shows the parameter table the code uses, word for word.

use morph_model::CostModel;

#[test]
fn docs_show_the_current_parameter_table() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/model.md");
    let doc = std::fs::read_to_string(path).expect("docs/model.md exists");
    let table = CostModel::tm5600().params_markdown();
    assert!(
        doc.contains(&table),
        "docs/model.md is out of date: replace its parameter table with the output of \
         `cargo run -p morph-model --example params`"
    );
}
