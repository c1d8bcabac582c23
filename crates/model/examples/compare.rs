//! Models two saved runs (ASLR off, ASLR on) and prints the comparison, the parts and
//! the sensitivity table.
//!
//! ```text
//! morph run ... --aslr 0 --stats-json off.json PROGRAM
//! morph run ... --aslr 1 --stats-json on.json  PROGRAM
//! cargo run --release -p morph-model --example compare -- off.json on.json
//! ```

use morph_model::{CostModel, Counts, compare, sensitivity};

fn load(path: &str) -> Result<Counts, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{path}: {e}"))?;
    let v: serde_json::Value = serde_json::from_str(&text).map_err(|e| format!("{path}: {e}"))?;
    Ok(Counts::from_stats_json(&v))
}

fn main() -> Result<(), String> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [off, on] = args.as_slice() else {
        return Err("usage: compare OFF.json ON.json".into());
    };
    let (off, on) = (load(off)?, load(on)?);
    let model = CostModel::tm5600();
    let (m_off, m_on) = (model.model(&off), model.model(&on));
    println!("counts off: {}", serde_json::to_string(&off).unwrap());
    println!("counts on:  {}", serde_json::to_string(&on).unwrap());
    println!();
    println!("| | user (s) | sys (s) | total (s) |\n|---|---|---|---|");
    for (name, m) in [("ASLR off", &m_off), ("ASLR on", &m_on)] {
        println!("| {name} | {:.3} | {:.3} | {:.3} |", m.user_s, m.sys_s, m.total_s);
    }
    println!();
    println!("| part | off (s) | on (s) |\n|---|---|---|");
    for ((name, a), (_, b)) in m_off.parts.iter().zip(&m_on.parts) {
        println!("| {name} | {a:.4} | {b:.4} |");
    }
    println!();
    let mut rows = vec![compare(&model, &off, &on)];
    rows.extend(sensitivity(&model, &off, &on));
    print!("{}", morph_model::sensitivity::markdown(&rows));
    Ok(())
}
