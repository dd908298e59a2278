//! The dashboard's doctor page lists at most 100 findings of each check and counts the rest,
//! so a large tree's report (tens of thousands of findings) is a page of bounded size; the API
//! and `yoi ticket doctor --json` still list every one.

mod common;

use common::dashboard::Dashboard;
use common::server::Server;
use common::Repo;

#[test]
fn the_doctor_page_lists_a_hundred_findings_of_a_check_and_counts_the_rest() {
    let repo = Repo::init();
    let real = repo.create("A readable ticket", "");
    // 130 folders named as tickets whose item.md cannot be read: one `item.parse` error each.
    let tickets = repo.path().join(".yoi/tickets");
    for n in 0..130 {
        let id = format!("{}{n:04}", &real[..22]);
        assert_ne!(id, real);
        std::fs::create_dir_all(tickets.join(&id)).unwrap();
        std::fs::write(tickets.join(&id).join("item.md"), "no front matter\n").unwrap();
    }
    let server = Server::start(&repo);
    let (status, api) = server.get(&repo, "/doctor");
    assert_eq!(status, 200);
    let every = api["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["check"] == "item.parse")
        .count();
    assert_eq!(every, 130, "the API lists every finding");

    let page = Dashboard::login(&repo).page("/doctor");
    let listed = page.matches("<code>item.parse</code> · ").count();
    assert_eq!(listed, 100, "the page lists the first hundred");
    assert!(
        page.contains("30 more <code>item.parse</code> finding(s) not listed here"),
        "the page counts the rest"
    );
    assert!(
        page.contains("130 error(s)"),
        "the totals are the whole report's"
    );
}
