// What the Ask tab says, in plain words with the next step, in the question's language (English, Japanese).
export const MAX_QUESTION = 2000;

const CJK = /[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uff66-\uff9f]/;

export function languageOf(question) {
  return CJK.test(String(question || "")) ? "ja" : "en";
}

const plural = (n, one, many) => n + " " + (n === 1 ? one : many);

const TEXT = {
  en: {
    refusedBefore: "Refused before asking the model: no indexed passage is about this question. Try the words your documents use, or add the folder or site that covers it (Sources tab).",
    refusedByModel: "Refused: the model found that the passages do not hold the answer. Try other words, or add the documents that cover it (Sources tab).",
    refusedMissing: (names) => "Refused before asking the model: no passage found mentions " + names + ", which the question asks about. Check the spelling your documents use, or add the folder or site that covers it (Sources tab).",
    withheld: (held, checked) => "Withheld: only " + held + " of " + checked + " checked sentences of the model's answer are backed by your documents, so it is not given as an answer. Its words are folded below; check them against the sources before you rely on them.",
    withheldByCheck: "Withheld: asked about each sentence of its answer, the model found none of them in the passages they cite. What the sources say is quoted instead; the model's words are folded below.",
    leftOut: (n) => plural(n, "sentence", "sentences") + " of the model's answer " + (n === 1 ? "was" : "were") + " left out: asked, the model did not find " + (n === 1 ? "it" : "them") + " in the passage cited (struck through in the answer).",
    unsupported: (n) => plural(n, "sentence is", "sentences are") + " not supported by the sources (marked unverified): check " + (n === 1 ? "it" : "them") + " before you rely on " + (n === 1 ? "it" : "them") + ".",
    invalid: (list) => "Removed citations to sources that do not exist: " + list + ".",
    truncated: "The answer was cut at its length limit. Ask a narrower question, or raise CITEDOCS_LLM_MAX_TOKENS on the server.",
    repetition: "The model began repeating itself, so it was stopped; the answer keeps one copy. Ask again, or ask a narrower question.",
    stopped: "Stopped. What was written so far is kept; ask again for a full answer.",
    closed: "The connection closed before the answer finished. Ask again.",
    unreachable: "Could not reach the server. Check that `citedocs serve` is running, then ask again.",
    tooLong: (n) => "Questions can be up to 2,000 characters; this one has " + n.toLocaleString("en") + ". Shorten it to ask.",
    withheldSummary: "What the model wrote (withheld: not supported by the sources)",
    noRelated: "No passage is about this question, so none is listed.",
    evidenceWaiting: "What the passages say (best sentences, found before the model writes)",
    evidenceAnswered: "What the passages say (best sentences)",
    evidenceRefused: "What the closest passages say (they do not answer the question)",
    evidenceWithheld: "What the passages say (the model's answer was not backed by them)",
    evidenceStopped: "What the passages say (the answer was stopped)",
    evidenceFailed: "What the passages say (no answer was written)",
  },
  ja: {
    refusedBefore: "回答しませんでした：この質問に関する文書が索引に見つからないため、モデルには問い合わせていません。文書で使われている言葉で聞き直すか、該当するフォルダーやサイトを「Sources」タブで追加してください。",
    refusedByModel: "回答しませんでした：見つかった文書には答えが書かれていないとモデルが判断しました。別の言葉で聞き直すか、答えを含む文書を「Sources」タブで追加してください。",
    refusedMissing: (names) => "回答しませんでした：質問にある " + names + " は、見つかったどの文書にも書かれていないため、モデルには問い合わせていません。文書での綴りを確かめるか、該当するフォルダーやサイトを「Sources」タブで追加してください。",
    withheld: (held, checked) => "回答を保留しました：モデルの回答のうち、文書で裏付けられた文は " + checked + " 文中 " + held + " 文だけです。モデルの文章は下に折りたたんであります。使う前に出典と照らし合わせてください。",
    withheldByCheck: "回答を保留しました：モデルに自分の回答の各文を確かめさせたところ、引用した文書にどの文も見つかりませんでした。代わりに文書の該当箇所を引用しています。モデルの文章は下に折りたたんであります。",
    leftOut: (n) => "モデルの回答のうち " + n + " 文を除きました：引用した文書にその内容が見つからないとモデル自身が判断したためです（取り消し線で表示）。",
    unsupported: (n) => n + " 文は出典で裏付けられていません（「unverified」の印）。使う前に確認してください。",
    invalid: (list) => "存在しない出典への引用を削除しました：" + list + "。",
    truncated: "回答が長さの上限で途切れました。質問を絞るか、サーバーの CITEDOCS_LLM_MAX_TOKENS を増やしてください。",
    repetition: "モデルが同じ文を繰り返し始めたため止めました（回答には一度だけ残しています）。もう一度、または質問を絞って聞いてください。",
    stopped: "停止しました。ここまでの文章は残してあります。全体の回答が必要ならもう一度質問してください。",
    closed: "回答の途中で接続が切れました。もう一度質問してください。",
    unreachable: "サーバーに接続できません。`citedocs serve` が動いているか確認してから、もう一度質問してください。",
    tooLong: (n) => "質問は 2,000 文字までです（いまは " + n.toLocaleString("ja") + " 文字）。短くしてから質問してください。",
    withheldSummary: "モデルが書いた文章（出典で裏付けられないため保留）",
    noRelated: "この質問に関する文書はないため、出典は表示していません。",
    evidenceWaiting: "文書の該当箇所（モデルが書く前に見つけた要点）",
    evidenceAnswered: "文書の該当箇所（要点）",
    evidenceRefused: "最も近い文書の箇所（質問の答えは含まれていません）",
    evidenceWithheld: "文書の該当箇所（モデルの回答はこれらで裏付けられませんでした）",
    evidenceStopped: "文書の該当箇所（回答は停止されました）",
    evidenceFailed: "文書の該当箇所（回答は書かれませんでした）",
  },
};

export function words(language) {
  return TEXT[language] || TEXT.en;
}
