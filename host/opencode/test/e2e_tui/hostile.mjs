// e2e_tui.mjs's scenario with the fake server part: model-written text with escape
// sequences, shown without them.
// Each exported function is one scenario, run by e2e_tui.mjs in its order on one TUI.
import { api, ok, waitFor } from "../e2e_lib.mjs";
import { paneTitle, keys, sidebar, showsOk, gone, setTasks, AGO, type, screen, keepScreen } from "./world.mjs";

// Text a model wrote, with escape sequences in it (a title set by OSC 2, a
// clear screen and a cursor move by CSI, a bidirectional override): the panel
// shows it without them, in the sidebar, on the page and in the detail; the
// pane's title is what it was; nothing of the sequences' payload shows.
export async function hostileText() {
  const sid = (await api("POST", "/session", { title: "hostile text" })).json?.id;
  await api("POST", "/tui/select-session", { sessionID: sid });
  await showsOk("hostile: a fresh session on screen", ["hostile text"]);
  const title = paneTitle();
  const evil = "Evil\x1b]2;PWNED\x07 \x1b[2J\x1b[1;1Htask\u202eok";
  await setTasks(sid, [{ id: "bg_eeee0001", kind: "agent", status: "running", description: evil,
    agent: "gen\x1b[31meral", created: AGO(5000), started: AGO(5000),
    answer: "Done.\x1b]2;PWNED\x07\n\x1b[2J\x1b[Hline two \u202eevil" }]);
  await showsOk("hostile: the sidebar shows the description without its sequences", [/● running Evil task\ufffdok general · \d+s/],
    sidebar);
  ok(paneTitle() === title, `hostile: the pane's title is the one OpenCode set ("${title}")`, paneTitle());
  type("/bgtasks");
  await showsOk("hostile: /bgtasks is offered", ["/bgtasks"]);
  keys("Enter");
  await showsOk("hostile: the page line too", [/› ● running Evil task\ufffdok · general · \d+s/]);
  keys("Enter");
  await showsOk("hostile: the detail: description and answer without sequences, the answer's line break kept",
    [/bg_eeee0001 · agent general · ● running · \d+s Evil task\ufffdok latest answer: Done\. line two \ufffdevil/]);
  const shown = screen();
  keepScreen("hostile-detail");
  ok(/^ {2}line two \ufffdevil\s*$/m.test(shown) && /^ {2}Done\.\s*$/m.test(shown),
    "hostile: the answer's two lines, each on its own row", shown);
  ok(!shown.includes("PWNED") && !shown.includes("[2J") && !shown.includes("[1;1H"), "hostile: no payload of a sequence on the screen",
    shown);
  ok(!paneTitle().includes("PWNED"), `hostile: the pane's title is OpenCode's page title ("${paneTitle()}")`, paneTitle());
  keys("Escape");
  await showsOk("hostile: esc: back to the list", ["↑↓ select · enter detail"]);
  keys("Escape");
  await gone("hostile: esc: back from the page", "↑↓ select · enter detail");
  ok(await waitFor("the session's title", () => paneTitle() === title, 5000), "hostile: back on the session, its title again",
    paneTitle());
}
