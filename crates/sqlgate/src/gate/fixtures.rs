//! What the gate's unit tests share.

use std::path::Path;

use crate::config::Config;
use crate::gate::plan::SuitePlan;

/// A suite of two cases sharing one gold query on a database `shop`.
pub(crate) fn suite(dir: &Path) -> SuitePlan {
    suite_with(dir, "")
}

/// [`suite`] with more `[[suite]]` settings.
pub(crate) fn suite_with(dir: &Path, settings: &str) -> SuitePlan {
    let db = dir.join("db").join("shop.sqlite");
    std::fs::create_dir_all(db.parent().unwrap()).unwrap();
    rusqlite::Connection::open(&db)
        .unwrap()
        .execute_batch("CREATE TABLE items(price INTEGER); INSERT INTO items VALUES (5), (7);")
        .unwrap();
    let gold = "SELECT max(price) FROM items";
    std::fs::write(
        dir.join("cases.jsonl"),
        format!(
            "{{\"id\": \"a\", \"db\": \"shop\", \"question\": \"max?\", \"gold\": \"{gold}\"}}\n\
             {{\"id\": \"b\", \"db\": \"shop\", \"question\": \"top?\", \"gold\": \"{gold}\"}}\n"
        ),
    )
    .unwrap();
    std::fs::write(
        dir.join("suite.toml"),
        "name = \"shop\"\ncases = \"cases.jsonl\"\ndb_dir = \"db\"\n",
    )
    .unwrap();
    std::fs::write(
        dir.join("sqlgate.toml"),
        format!("[[suite]]\nbenchmark = \"suite.toml\"\n{settings}\n\n[[system]]\nname = \"s\"\ntype = \"command\"\ncommand = [\"true\"]\n"),
    )
    .unwrap();
    let config = Config::load(&dir.join("sqlgate.toml")).unwrap();
    let profile = config.profile("default").unwrap();
    crate::gate::setup::suites(&config, &profile)
        .unwrap()
        .remove(0)
}
